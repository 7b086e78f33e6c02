"""A clause saying the thing asked is fine keeps a "no" to an allergy question (kiosk.llm.allergy_lines)."""

from __future__ import annotations

import pytest

from kiosk.llm.allergy_lines import fine_after
from kiosk.llm.choices import checked_choice
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

NOTES = """Notes of Raj, oldest first:
<notes>
[5 November 2026]
Priya: Kabir is allergic to cashews and pistachios. Peanuts and almonds are fine. His EpiPen is in his bag.
Priya: Anaya is allergic to kiwi, the rest of the fruit is fine.
</notes>"""


def test_a_clause_naming_the_thing_then_fine_says_it_is_fine() -> None:
    lines = tuple(NOTES.splitlines()[3:5])
    assert fine_after("Is Kabir allergic to peanuts?", lines)
    assert not fine_after("Is Kabir allergic to cashews?", lines)
    assert not fine_after("Is Anaya allergic to kiwi?", lines)  # "allergic to kiwi, the rest ... is fine"


@pytest.mark.parametrize(
    ("question", "answer", "checked"),
    [
        ("Is Kabir allergic to peanuts?", "No", None),
        ("Is Kabir allergic to almonds?", "No.", None),
        ("Is Kabir allergic to cashews?", "No", UNKNOWN_ANSWER),
        ("Is Anaya allergic to kiwi?", "No", UNKNOWN_ANSWER),
        ("Is Anaya allergic to walnuts?", "No", UNKNOWN_ANSWER),  # the notes are silent on walnuts
    ],
)
def test_a_no_to_an_allergy_question_stands_only_where_a_line_says_it_is_fine(
    question: str, answer: str, checked: str | None
) -> None:
    assert checked_choice(question, answer, answer_prompt(NOTES, question)) == checked
