"""An answer the notes about the question do not give becomes "I don't know" (kiosk.llm.grounding)."""

from __future__ import annotations

import pytest

from kiosk.llm.grounding import dated_note_lines, grounded, grounded_answer
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

NOTES = """Notes of Erik, oldest first:
<notes>
[14 September 2026]
Erik: Leo gets 20 kronor pocket money every Saturday
Erik: The dentist moved my check-up to next Tuesday (22 September 2026) at 10:00
[18 September 2026]
Erik: The new dishwasher comes on Friday, I'll stay home for the delivery
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[20 September 2026]
- (family group note by Maja — not the asker's) Maja: I'll bake the cake for Farmor's party
</notes>"""


def notes(question: str) -> str:
    return answer_prompt(NOTES, question)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How much did the new dishwasher cost?", "20 kronor"),  # the pocket money, not the dishwasher
        ("What time does Farmor's party start?", "10:00"),  # the dentist's time
        ("When is my dentist appointment?", "Saturday"),  # the dentist note holds no Saturday
    ],
)
def test_a_fact_copied_from_a_note_about_something_else_is_withdrawn(question: str, answer: str) -> None:
    assert not grounded(question, answer, notes(question))
    assert grounded_answer(question, answer, notes(question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("When is my dentist check-up?", "Tuesday 22 September 2026"),  # the anchor, with its weekday
        ("What time is my dentist check-up?", "10:00"),
        ("When does the dishwasher come?", "Friday"),
        ("Who is baking the cake for Farmor's party?", "Maja"),  # the author of a shared note about it
        ("How much pocket money does Leo get?", "20 kronor"),
        ("When did I note the dishwasher delivery?", "Friday 18 September 2026"),  # the day it is filed under
    ],
)
def test_an_answer_the_notes_about_the_question_give_is_kept(question: str, answer: str) -> None:
    assert grounded(question, answer, notes(question))
    assert grounded_answer(question, answer, notes(question)) is None


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Is the dishwasher coming on Monday?", "No"),  # a yes/no answer chooses; it is left to the model
        ("Is my check-up in the morning or the afternoon?", "The morning"),
        ("How much did the new dishwasher cost?", "I don't know."),
        ("When does the new dishwasher come?", "The new dishwasher"),  # adds nothing: earlier steps handle it
    ],
)
def test_choices_unknowns_and_restatements_are_left_alone(question: str, answer: str) -> None:
    assert grounded(question, answer, notes(question))


def test_note_lines_carry_the_day_they_are_filed_under_with_its_weekday() -> None:
    lines = dated_note_lines(notes("?"))
    assert lines[0] == ("Monday 14 September 2026", "Erik: Leo gets 20 kronor pocket money every Saturday")
    assert lines[-1][0] == "Sunday 20 September 2026" and "Maja" in lines[-1][1]
    assert not any("Question" in line for _, line in lines)


def test_a_paraphrase_no_note_names_is_left_to_the_model() -> None:
    """No line says "dog" or "called": the words differ, so there is nothing to judge the answer by."""
    prompt = "<notes>\n[1 March 2024]\nAlice: Alice adopted a beagle puppy named Biscuit\n</notes>\n"
    assert grounded("What is my dog called?", "Biscuit", prompt)
