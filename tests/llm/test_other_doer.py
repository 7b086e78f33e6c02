"""A "yes" to whether a named person does something the notes say another does (kiosk.llm.other_doer)."""

from __future__ import annotations

import pytest

from kiosk.llm.choices import checked_choice
from kiosk.llm.other_doer import another_does_it
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

EYE_CLINIC = """Notes of Thandi, oldest first:
<notes>
[5 November 2026]
Thandi: St John's moved Gogo's eye appointment to Thursday the 12th (12 November 2026) at 11. Sipho, can you take her?
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[5 November 2026]
- (family group note by Sipho — not the asker's) Sipho: Sipho will sleep after the night shift that day. Ask Mpho.
[6 November 2026]
- (family group note by Mpho — not the asker's) Mpho: Mpho will take Gogo to St John's on the 12th (12 November 2026).
</notes>"""


def test_a_yes_for_one_person_is_withdrawn_where_the_notes_name_another_doing_it() -> None:
    question = "Is Sipho taking Gogo to her eye appointment today?"
    assert another_does_it(question, answer_prompt(EYE_CLINIC, question))
    assert checked_choice(question, "Yes", answer_prompt(EYE_CLINIC, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    "question",
    [
        "Is Mpho taking Gogo to her eye appointment?",  # the one the notes name
        "Is Gogo's eye appointment on Thursday?",  # asks no one's doing
        "Is Sipho working nights this week?",  # the notes name no one doing it
        "Can I take Gogo to her eye appointment?",  # the asker asks what they may do
    ],
)
def test_a_question_about_the_doer_the_notes_name_or_about_no_doer_is_left_alone(question: str) -> None:
    assert not another_does_it(question, answer_prompt(EYE_CLINIC, question))


ROTA = """Notes of Grace, oldest first:
<notes>
[17 November 2026]
Grace: Hannah is off sick this week. Wei, can you take her Wednesday afternoon on reception?
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[17 November 2026]
- (staff group note by Wei — not the asker's) Wei: Wei can't on Wednesday, Wei is at the Benoit install all day.
</notes>"""


def test_a_yes_for_a_person_who_says_they_cannot_on_the_day_asked_is_withdrawn() -> None:
    question = "Is Wei covering Hannah's Wednesday afternoon?"
    assert another_does_it(question, answer_prompt(ROTA, question))
    assert not another_does_it("Is Wei covering Hannah's Thursday afternoon?", answer_prompt(ROTA, question))


COVER = """Notes of Grace, oldest first:
<notes>
[9 November 2026]
- (staff group note by Omar — not the asker's) Omar: Can someone cover reception on Thursday in the morning?
- (staff group note by Wei — not the asker's) Wei: Wei will cover Thursday morning for Omar.
[10 November 2026]
- (staff group note by Mia — not the asker's) Mia: I'm covering Jack's Saturday shift.
</notes>"""


@pytest.mark.parametrize(
    "question",
    ["Is Omar on reception on Thursday morning?", "Is Jack working on Saturday?"],
)
def test_a_yes_for_a_person_someone_covers_for_on_the_day_is_withdrawn(question: str) -> None:
    assert another_does_it(question, answer_prompt(COVER, question))


def test_a_cover_on_another_day_or_by_the_person_asked_is_no_reason() -> None:
    assert not another_does_it("Is Omar on reception on Friday morning?", answer_prompt(COVER, "q"))
    assert not another_does_it("Is Wei on reception on Thursday morning?", answer_prompt(COVER, "q"))
