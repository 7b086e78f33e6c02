"""Yes/no and either/or answers the notes do not back (kiosk.llm.choices through kiosk.llm.yes_no,
kiosk.llm.done_questions and kiosk.llm.either_or): a "yes" to a thing no line names, a "no" to an allergy the
notes are silent on, a "no" to whether a bill was paid after a later note paid it, a day a related later line moved,
and a time the notes write in digits where the question spells it."""

from __future__ import annotations

import pytest

from kiosk.llm.choices import contradicted, notes_choice
from tests.doubles import answer_prompt

MENSAH = """Notes of Kofi, oldest first:
<notes>
[27 October 2026]
Kofi: Yaw is allergic to egg. Cakes and pancakes too unless they're egg free.
Kofi: Nana's tablets: amlodipine 5 mg every morning.
[2 November 2026]
Kofi: Yaw's match on Sunday the 15th at ten at Heaton Park, he needs his shin pads.
[3 November 2026]
Kofi: The boiler is making that banging noise again. British Gas are coming Friday between 8 and 1.
[5 November 2026]
Kofi: The boiler visit has moved to Monday the 9th, same time, they had no engineer for Friday.
[7 November 2026]
Kofi: The TV licence is due on the 20th, I'll do it next week.
[10 November 2026]
Kofi: Coach says Sunday's match is moved to Saturday at 2 because the pitch is waterlogged.
[18 November 2026]
Kofi: Paid the TV licence tonight.
</notes>"""

UNTIL_THE_7TH = MENSAH.split("[10 November 2026]")[0] + "</notes>"


@pytest.mark.parametrize(
    ("question", "answer", "withdrawn"),
    [
        ("Are Nana's ankles swelling again?", "Yes", True),  # no line holds "ankles"
        ("Are Nana's ankles swelling again?", "No", False),  # a "no" is no harm: left to the other rules
        ("Is there a match on Saturday?", "Yes", False),  # "there" names no thing
        ("Is Yaw allergic to nuts?", "No.", True),  # the notes say egg, and nothing of nuts
        ("Is Yaw allergic to egg?", "Yes", False),
        ("Has the TV licence been paid?", "No.", True),  # paid on the 18th, after "due on the 20th"
        ("Has the TV licence been paid?", "Due on the 20th.", True),  # an answer saying still to do is a "no"
        ("Is the match at Heaton Park at ten or at two?", "Ten", True),  # "moved to Saturday at 2"
        ("Is the match at Heaton Park at ten or at two?", "At two", False),
    ],
)
def test_a_choice_the_notes_do_not_back_is_contradicted(question: str, answer: str, withdrawn: bool) -> None:
    assert contradicted(question, answer, answer_prompt(MENSAH, question)) is withdrawn


def test_a_no_to_whether_it_was_paid_stands_while_the_notes_say_it_is_still_due() -> None:
    question = "Has the TV licence been paid?"
    assert not contradicted(question, "No.", answer_prompt(UNTIL_THE_7TH, question))


def test_a_later_line_sharing_a_rare_word_moves_the_day_a_still_question_asks() -> None:
    question = "Is British Gas still coming on Friday?"
    assert notes_choice(question, "Yes", answer_prompt(MENSAH, question)) == "No"
    question = "Is British Gas still coming between 8 and 1?"
    assert notes_choice(question, "Yes", answer_prompt(MENSAH, question)) is None


def test_a_no_to_a_medicine_a_line_restarts_is_withdrawn() -> None:
    ward = """Notes of Tomasz, oldest first:
<notes>
[16 November 2026]
Grace: Joan Ellis is on metformin 500 mg twice a day. Hold her metformin Thursday morning.
[21 November 2026]
Tomasz: Joan's knee went well. Her metformin restarts today with breakfast.
</notes>"""
    question = "Does Joan take her metformin this morning?"
    assert contradicted(question, "No.", answer_prompt(ward, question))
    assert not contradicted(question, "No.", answer_prompt(ward.split("[21 November 2026]")[0] + "</notes>", question))
