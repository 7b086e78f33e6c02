"""An amount for a named day that the notes give for other days becomes "I don't know" (kiosk.llm.day_amounts)."""

from __future__ import annotations

import pytest

from kiosk.llm.day_amounts import amount_for_days, asked_days, checked_day_amounts, day_amounts
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

WARFARIN = """Notes of Priya, oldest first:
<notes>
[2 November 2026]
Priya: Dadi's warfarin is 3 mg every evening at 6, the blue tablets.
[3 November 2026]
Priya: Dadi's warfarin goes down to 2.5 mg on weekdays, 3 mg on Saturday (7 November 2026) and Sunday.
</notes>"""

BROWN = """Notes of Kamala, oldest first:
<notes>
[17 November 2026]
Kamala: INR was 2.4 today, same warfarin doses.
[24 November 2026]
Kamala: Brown 1 mg warfarin tablets now. So three on Saturday and Sunday, two and a half on weekdays.
</notes>"""


def test_a_line_ties_each_amount_to_the_days_named_after_it() -> None:
    line = (
        "She goes down to 2.5 mg on weekdays and stays on 3 mg on Saturday (7 November 2026) and Sunday. "
        "Next check in two weeks, Tuesday the 17th at 9."
    )
    weekend = frozenset({"saturday", "sunday"})
    assert day_amounts(line) == [
        ("2:5", frozenset({"monday", "tuesday", "wednesday", "thursday", "friday"})),
        ("3", weekend),
    ]
    assert day_amounts("On weekends 3 mg") == [("3", weekend)]
    assert day_amounts("Dadi's warfarin is 3 mg every evening at 6") == []


def test_the_days_a_question_names() -> None:
    assert asked_days("How much does she take on a Wednesday?") == {"wednesday"}
    assert asked_days("And at weekends?") == {"saturday", "sunday"}
    assert asked_days("How much warfarin do I take?") == frozenset()


@pytest.mark.parametrize(
    ("notes", "question", "answer"),
    [
        (WARFARIN, "How much warfarin does Dadi take on a Wednesday?", "3 mg"),
        (BROWN, "How many brown tablets do I take on Saturday?", "2"),
        (BROWN, "How many brown tablets do I take on Tuesdays?", "Three"),
    ],
)
def test_another_days_amount_is_withdrawn(notes: str, question: str, answer: str) -> None:
    assert checked_day_amounts(question, answer, answer_prompt(notes, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("notes", "question", "answer"),
    [
        (WARFARIN, "How much warfarin does Dadi take on a Wednesday?", "2.5 mg"),
        (WARFARIN, "How much warfarin does Dadi take on Sundays?", "3 mg"),
        (BROWN, "How many brown tablets do I take on Saturday?", "Three"),
        (BROWN, "How many brown tablets do I take on a Monday?", "Two and a half"),
        (WARFARIN, "How much warfarin does Dadi take?", "3 mg"),  # no day asked
        (WARFARIN, "Does Dadi take 3 mg on a Wednesday?", "No"),  # a yes/no chooses
    ],
)
def test_the_days_own_amount_or_a_question_without_a_day_is_kept(notes: str, question: str, answer: str) -> None:
    assert checked_day_amounts(question, answer, answer_prompt(notes, question)) is None


def test_no_amount_is_expected_where_no_line_ties_two() -> None:
    assert (
        amount_for_days(
            "How much warfarin does Dadi take on a Wednesday?", answer_prompt(WARFARIN.split("[3")[0] + "</notes>", "x")
        )
        is None
    )
