"""Dates named in a question as retrieval windows, and the dated ranking they add to the fusion (the retriever's
use of it: tests/retrieval/test_hybrid.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from kiosk.retrieval.dates import date_windows, named_days
from kiosk.retrieval.hybrid import fuse
from kiosk.retrieval.tuning import RetrievalTuning


def _days(text: str, after: int = 10) -> list[tuple[str, str]]:
    return [(w.start.date().isoformat(), w.end.date().isoformat()) for w in date_windows(text, after)]


def test_a_named_day_opens_a_window_from_the_day_before_to_days_after_it() -> None:
    assert _days("What did Jolene ask Deb on 13 March, 2023?") == [("2023-03-12", "2023-03-24")]
    assert _days("What did John do the week before August 3, 2023?") == [("2023-08-02", "2023-08-14")]
    assert _days("And on the 5th of May 2024?", after=0) == [("2024-05-04", "2024-05-06")]


def test_a_month_or_part_of_one_spans_its_days_and_several_dates_give_several_windows() -> None:
    assert _days("Which classes did Evan join in mid-August 2023?", after=0) == [("2023-08-09", "2023-08-21")]
    assert _days("What did she read in Dec 2022?", after=0) == [("2022-11-30", "2023-01-01")]
    assert _days("Between January 2023 and 2 February 2023?", after=0) == [
        ("2022-12-31", "2023-02-01"),
        ("2023-02-01", "2023-02-03"),
    ]


def test_dates_without_a_year_give_no_window_and_an_impossible_day_falls_back_to_its_month() -> None:
    assert _days("When did Melanie go camping in June?") == []
    assert _days("How many times in 2023?") == []
    assert _days("What happened on 30 February 2023?", after=0) == [("2023-01-31", "2023-03-01")]


def test_the_dated_ranking_is_a_third_weighted_ranking_of_the_fusion() -> None:
    config = RetrievalTuning(dense_weight=1.0, lexical_weight=1.0, date_weight=2.0)
    fused = dict(fuse([(1, 0.9), (2, 0.5)], [(2, 3.0), (3, 1.0)], config, 10, dated=[(3, 0.8), (4, 0.2)]))
    assert fused == pytest.approx({1: 1.0, 2: 1.0, 3: 2.0, 4: 0.0})
    off = replace(config, date_weight=0.0)
    assert dict(fuse([(1, 0.9), (2, 0.5)], [(2, 3.0)], off, 10, dated=[(4, 0.9)])).keys() == {1, 2}


# ---- at the terminal: days named without a year, resolved against the question's local time ----------------------

NEW_YORK = ZoneInfo("America/New_York")
THURSDAY_9PM = datetime(2026, 12, 3, 21, 0, tzinfo=NEW_YORK)  # already Friday in UTC


def _named(text: str, asked: datetime = THURSDAY_9PM) -> list[str]:
    return [day.isoformat() for day in named_days(text, asked)]


@pytest.mark.parametrize(
    ("question", "days"),
    [
        ("When is the dentist next Tuesday?", ["2026-12-08"]),
        ("What do I have on Tuesday?", ["2026-12-08"]),
        ("What did I do last Friday?", ["2026-11-27"]),
        ("What did the doctor say on Tuesday?", ["2026-12-01"]),  # told in the past: the Tuesday before
        ("What do I need to bring tonight?", ["2026-12-03"]),  # the local day, not the UTC one
        ("Who picks up Tom tomorrow?", ["2026-12-04"]),
        ("What is due on the 14th?", ["2026-12-14"]),
        ("What happened on the 14th?", ["2026-11-14"]),
        ("What did the physio say on 14 November?", ["2026-11-14"]),
        ("Is the party on November 14th or the 20th?", ["2026-12-20", "2027-11-14"]),
        ("Who lives on the 2nd floor?", []),
        ("What did Ann do on 14 August, 2023?", []),  # a date with a year is the window of date_windows alone
    ],
)
def test_days_without_a_year_are_resolved_from_the_questions_local_day(question: str, days: list[str]) -> None:
    assert _named(question) == days


def test_on_the_14th_asked_on_the_3rd_and_on_the_20th() -> None:
    assert _named("What is on the 14th?", datetime(2026, 11, 3, 21, 0, tzinfo=NEW_YORK)) == ["2026-11-14"]
    assert _named("What is on the 14th?", datetime(2026, 11, 20, 21, 0, tzinfo=NEW_YORK)) == ["2026-12-14"]


def test_a_day_without_a_year_opens_a_local_window_only_when_the_question_has_a_local_time() -> None:
    question = "What do I have next Tuesday?"
    assert date_windows(question, 3) == []  # the LoCoMo replay: no terminal, no window, the ranking as before
    (window,) = date_windows(question, 3, THURSDAY_9PM)
    assert window.start.isoformat() == "2026-12-07T00:00:00-05:00"
    assert window.end.isoformat() == "2026-12-12T00:00:00-05:00"
    dated = "What did Ann do on 14 August, 2023?"
    assert date_windows(dated, 3, THURSDAY_9PM) == date_windows(dated, 3)
    assert named_days("What happened on the 14th?", THURSDAY_9PM) == [date(2026, 11, 14)]
