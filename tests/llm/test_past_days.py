"""A day already past, given as when something is or will be, becomes "I don't know" (kiosk.llm.past_days)."""

from __future__ import annotations

from datetime import date

import pytest

from kiosk.llm.past_days import asked_span, checked_past_days, days_with_year, names_only_past_days
from kiosk.llm.prompts import UNKNOWN_ANSWER

TENTH_OF_NOVEMBER = date(2026, 11, 10)


def test_days_are_read_with_their_year_only() -> None:
    assert days_with_year("29 October 2026, the 3rd of May, 2027, November 12 2026, the 14th, 5 May") == [
        date(2026, 10, 29),
        date(2027, 5, 3),
        date(2026, 11, 12),
    ]
    assert days_with_year("31 September 2026") == []  # no such day


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("When's my next warfarin blood test?", "29 October 2026"),  # the day the dose changed
        ("When is Mrs Lin going home?", "Monday 2 November 2026"),
        ("What day is the bin collection?", "9 November 2026 and 3 November 2026"),
    ],
)
def test_only_past_days_for_when_something_is_are_withdrawn(question: str, answer: str) -> None:
    assert names_only_past_days(question, answer, TENTH_OF_NOVEMBER)
    assert checked_past_days(question, answer, TENTH_OF_NOVEMBER) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("When's my next warfarin blood test?", "Thursday 12 November 2026 at 9"),
        ("When's my next warfarin blood test?", "10 November 2026"),  # today is not past
        ("When's my next warfarin blood test?", "29 October 2026, then 12 November 2026"),  # one day still ahead
        ("When did I last have a blood test?", "29 October 2026"),  # asked when it was
        ("When is Mum's birthday?", "24 October"),  # no year: perhaps next year's
        ("When's my next warfarin blood test?", UNKNOWN_ANSWER),
    ],
)
def test_a_day_ahead_a_question_about_the_past_or_a_day_without_year_is_kept(question: str, answer: str) -> None:
    assert checked_past_days(question, answer, TENTH_OF_NOVEMBER) is None


def test_without_the_day_asked_nothing_is_judged() -> None:
    assert checked_past_days("When's my next warfarin blood test?", "29 October 2026", None) is None


MONDAY = date(2026, 11, 9)


def test_the_span_a_question_names() -> None:
    assert asked_span("Which nights am I working this week?", date(2026, 11, 11)) == (MONDAY, date(2026, 11, 15))
    assert asked_span("What's on next week?", MONDAY) == (date(2026, 11, 16), date(2026, 11, 22))
    assert asked_span("Who is picking me up tomorrow?", MONDAY) == (date(2026, 11, 10), date(2026, 11, 10))
    assert asked_span("When is my dentist appointment?", MONDAY) is None


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Which nights am I working this week?", "Tuesday the 17th (17 November 2026)"),
        ("What is on tomorrow?", "The dentist on 12 November 2026"),
    ],
)
def test_days_all_outside_the_span_asked_are_withdrawn(question: str, answer: str) -> None:
    assert checked_past_days(question, answer, MONDAY) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Which nights am I working this week?", "Wednesday the 11th (11 November 2026) and Thursday"),
        ("What is on tomorrow?", "The dentist on 10 November 2026"),
        ("Is the party this week?", "No, on 20 November 2026"),  # a yes/no answer may name another day
        ("Which nights am I working this week?", "Wednesday and Thursday"),  # no year: not judged
    ],
)
def test_days_inside_the_span_or_a_yes_no_are_kept(question: str, answer: str) -> None:
    assert checked_past_days(question, answer, MONDAY) is None
