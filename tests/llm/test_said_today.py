"""A yes or no to whether something was done today needs a line said today about it (kiosk.llm.said_today)."""

from __future__ import annotations

from datetime import date

import pytest

from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.said_today import asks_whether_done_today, checked_said_today
from tests.doubles import answer_prompt

NOTES = """Notes of Marc, oldest first:
<notes>
[26 October 2026]
Marc: Maman's tablets: metformin 500 mg with breakfast and with supper, and her Lantus at bedtime.
[9 November 2026]
Théo: Walked Biscuit before school.
Marc: Gave Maman her Lantus, 12 units, at nine.
</notes>"""
TODAY = date(2026, 11, 9)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Has Maman had her metformin this morning?", "No"),  # only the list of her tablets, said weeks ago
        ("Has Maman had her metformin this morning?", "Yes"),
        ("Did anyone feed Biscuit today?", "Yes"),  # today's line is about his walk, not his food
    ],
)
def test_whether_it_was_done_today_without_a_line_of_today_is_unknown(question: str, answer: str) -> None:
    assert checked_said_today(question, answer, answer_prompt(NOTES, question), TODAY) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer", "asked_on"),
    [
        ("Has Maman had her Lantus tonight?", "Yes", TODAY),  # "Gave Maman her Lantus ... at nine", today
        ("Has anyone walked Biscuit this morning?", "Yes", TODAY),
        ("Has Maman had her metformin this morning?", "No", None),  # no terminal clock (a replay): not judged
        ("Is there school for Théo today?", "No", TODAY),  # how things are, not whether it was done
        ("Has Maman had her metformin this morning?", "I don't know", TODAY),
    ],
)
def test_a_line_of_today_or_another_kind_of_question_keeps_the_answer(
    question: str, answer: str, asked_on: date | None
) -> None:
    assert checked_said_today(question, answer, answer_prompt(NOTES, question), asked_on) is None


def test_the_next_day_yesterday_s_line_says_nothing_of_today() -> None:
    question = "Has Maman had her Lantus tonight?"
    assert checked_said_today(question, "Yes", answer_prompt(NOTES, question), date(2026, 11, 10)) == UNKNOWN_ANSWER


def test_only_questions_whether_something_was_done_today_are_judged() -> None:
    assert asks_whether_done_today("Has anyone walked Biscuit this morning?")
    assert asks_whether_done_today("Did Marc give her the Lantus tonight?")
    assert not asks_whether_done_today("Has Maman had her Lantus?")  # no day named
    assert not asks_whether_done_today("Is the pharmacy open today?")
