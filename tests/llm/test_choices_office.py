"""A right "yes" the notes about the question do not contradict stays (kiosk.llm.choices, kiosk.llm.yes_no): a
denial in the next clause is about someone else, a number the question names as a label is no day."""

from __future__ import annotations

from kiosk.llm.choices import checked_choice, notes_choice
from tests.doubles import answer_prompt

OFFICE = """Notes of Hannah, oldest first:
<notes>
[4 November 2026]
- (staff group note by Omar — not the asker's) Omar: For the lunch: Hannah is vegetarian and Wei can't eat shellfish.
[5 November 2026]
- (staff group note by Wei — not the asker's) Wei: The printer on floor 2 is jammed again. Ricoh is coming on Monday.
[9 November 2026]
- (staff group note by Grace — not the asker's) Grace: The Ricoh technician moved to Tuesday the 10th at 2.
[12 November 2026]
- (staff group note by Wei — not the asker's) Wei: The floor 2 printer is fixed. The Ricoh technician fixed it.
</notes>"""


def test_a_denial_after_and_is_about_the_next_person_not_the_one_asked() -> None:
    question = "Is Hannah vegetarian?"
    prompt = answer_prompt(OFFICE, question)
    assert notes_choice(question, "Yes", prompt) is None and checked_choice(question, "Yes", prompt) is None


def test_a_number_naming_a_floor_is_not_a_day_a_change_moved_away_from() -> None:
    question = "Is the printer on floor 2 working?"
    # not "No" from "moved to Tuesday the 10th at 2"; "working" is in no line, so the "yes" may still be withdrawn
    assert notes_choice(question, "Yes", answer_prompt(OFFICE, question)) is None
