"""Relative times in notes get the date they point to, computed from the day the note was said."""

from __future__ import annotations

from datetime import datetime

import pytest

from kiosk.llm.prompts import compact_notes
from kiosk.llm.time_anchors import anchor_relative_times

SAID = datetime(2023, 10, 22, 13, 0)  # a Sunday


@pytest.mark.parametrize(
    ("text", "anchored"),
    [
        ("I went there yesterday!", "I went there yesterday (21 October 2023)!"),
        ("the day before yesterday", "the day before yesterday (20 October 2023)"),
        ("This morning I ran", "This morning (22 October 2023) I ran"),
        ("Tomorrow is the day", "Tomorrow (23 October 2023) is the day"),
        ("Last Friday I passed.", "Last Friday (the Friday before 22 October 2023) I passed."),
        ("next Tuesday", "next Tuesday (the Tuesday after 22 October 2023)"),
        (
            "last week and last weekend",
            "last week (the week before 22 October 2023) and last weekend (the weekend before 22 October 2023)",
        ),
        ("I got hurt last month", "I got hurt last month (September 2023)"),
        ("next month", "next month (November 2023)"),
        ("Two weeks ago I got Coco", "Two weeks ago (two weeks before 22 October 2023) I got Coco"),
        ("3 days ago", "3 days ago (19 October 2023)"),
        ("a year ago", "a year ago (2022)"),
        ("last year", "last year (2022)"),
        ("earlier this year", "earlier this year (2023)"),
    ],
)
def test_relative_times_are_anchored_to_the_day_said(text: str, anchored: str) -> None:
    assert anchor_relative_times(text, SAID) == anchored


def test_month_arithmetic_crosses_the_year() -> None:
    assert anchor_relative_times("last month", datetime(2023, 1, 5)) == "last month (December 2022)"
    assert anchor_relative_times("next month", datetime(2023, 12, 5)) == "next month (January 2024)"


@pytest.mark.parametrize(
    "text",
    [
        "See you on Saturday",  # a weekday alone may point either way
        "yesterday (21 October 2023)",  # already anchored
        "the weekday after",
        "I have been there weekly",
    ],
)
def test_what_is_not_a_relative_time_or_already_anchored_is_left_alone(text: str) -> None:
    assert anchor_relative_times(text, SAID) == text


def test_the_answer_prompt_shows_each_note_anchored_to_its_own_date() -> None:
    text = compact_notes(
        [
            (datetime(2023, 5, 8, 13, 56), "I went to a support group yesterday.", "Caroline said this on 8 May 2023."),
            (datetime(2023, 6, 9, 10, 0), "We met up last week.", "Caroline said this on 9 June 2023."),
        ]
    )
    assert text.splitlines() == [
        "[8 May 2023]",
        "Caroline: I went to a support group yesterday (7 May 2023).",
        "[9 June 2023]",
        "Caroline: We met up last week (the week before 9 June 2023).",
    ]
