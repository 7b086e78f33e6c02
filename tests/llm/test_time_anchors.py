"""Relative times in notes get the date they point to, computed from the day the note was said."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from kiosk.eval.answering import answer_request
from kiosk.eval.locomo import parse_session_date
from kiosk.llm.prompts import compact_answer_messages, compact_notes
from kiosk.llm.time_anchors import anchor_local_times, anchor_relative_times, terminal_line
from kiosk.memory.note import Note

SAID = datetime(2023, 10, 22, 13, 0)  # a Sunday


@pytest.mark.parametrize(
    ("text", "anchored"),
    [
        ("I went there yesterday!", "I went there yesterday (21 October 2023)!"),
        ("the day before yesterday", "the day before yesterday (20 October 2023)"),
        ("Maths exam the day after tomorrow", "Maths exam the day after tomorrow (24 October 2023)"),  # not tomorrow's
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


# ---- at the terminal: the note's local time, and the days a family names ----------------------------------------

NEW_YORK = ZoneInfo("America/New_York")
THURSDAY_9PM = datetime(2026, 12, 3, 21, 0, tzinfo=NEW_YORK)  # 02:00 UTC on Friday 4 December


def _said(text: str, at: datetime) -> Note:
    return Note(None, 1, "face", text, at.astimezone(UTC), embedding=np.ones(4, np.float32))


def test_tonight_said_at_nine_pm_in_utc_minus_5_is_that_local_day_not_the_utc_one() -> None:
    note = _said("Dinner with Tom tonight, the pills before bed", THURSDAY_9PM)
    assert anchor_relative_times(note.content, note.timestamp) == (
        "Dinner with Tom tonight (4 December 2026), the pills before bed"  # the UTC reading: a day late
    )
    said, text, _ = terminal_line(note, NEW_YORK)
    assert (said.day, text) == (3, "Dinner with Tom tonight (3 December 2026), the pills before bed")
    _, prompt = compact_answer_messages("When is dinner?", [terminal_line(note, NEW_YORK)], "Anna")
    assert "[3 December 2026]\n- Dinner with Tom tonight (3 December 2026)" in prompt["content"]
    assert "this evening (3 December 2026)" in terminal_line(_said("Call me this evening", THURSDAY_9PM), NEW_YORK)[1]


@pytest.mark.parametrize(
    ("text", "anchored"),
    [
        ("Dentist next Tuesday at 10", "Dentist next Tuesday (8 December 2026) at 10"),
        ("I'll bring the cake on Sunday.", "I'll bring the cake on Sunday (6 December 2026)."),
        ("Actually it moved to Friday", "Actually it moved to Friday (4 December 2026)"),
        ("Tom's flight lands tomorrow", "Tom's flight lands tomorrow (4 December 2026)"),
        ("Rent is due on the 14th", "Rent is due on the 14th (14 December 2026)"),
        ("The boiler man comes the 14th.", "The boiler man comes the 14th (14 December 2026)."),
        ("Pay the nurse by the 3rd", "Pay the nurse by the 3rd (3 December 2026)"),  # today
        ("I've got the dentist on Friday", "I've got the dentist on Friday (4 December 2026)"),  # "have", not the past
        ("She’s got physio on the 14th", "She’s got physio on the 14th (14 December 2026)"),
        ("Next week on the 4th", "Next week (the week after 3 December 2026) on the 4th (4 December 2026)"),
        ("Staff meeting Friday at 1:30.", "Staff meeting Friday (4 December 2026) at 1:30."),
        ("Gas man coming Monday between 8 and 1", "Gas man coming Monday (7 December 2026) between 8 and 1"),
    ],
)
def test_days_named_at_the_terminal_get_their_local_date(text: str, anchored: str) -> None:
    assert anchor_local_times(text, THURSDAY_9PM) == anchored


@pytest.mark.parametrize(
    ("text", "said", "anchored"),
    [
        (
            "On Sunday the 27th I need a lift to the station.",
            datetime(2026, 9, 19, 9, 0),
            "On Sunday the 27th (27 September 2026) I need a lift to the station.",
        ),
        (
            "Dentist rang, it's moved to Tuesday the 29th, same time.",
            datetime(2026, 9, 24, 9, 0),
            "Dentist rang, it's moved to Tuesday the 29th (29 September 2026), same time.",
        ),
        (
            "The bazaar is on Saturday the 14th, my birthday.",
            datetime(2026, 11, 6, 9, 0),
            "The bazaar is on Saturday the 14th (14 November 2026), my birthday.",
        ),
        (
            "Lunch moved to Sunday, the 4th.",
            datetime(2026, 9, 28, 9, 0),
            "Lunch moved to Sunday, the 4th (4 October 2026).",
        ),
    ],
)
def test_a_weekday_with_its_day_of_the_month_is_one_day_not_the_next_such_weekday(
    text: str, said: datetime, anchored: str
) -> None:
    assert anchor_local_times(text, said) == anchored


@pytest.mark.parametrize(
    "text",
    [
        "Dentist on Friday the 24th at 8:15.",  # the 24th of September 2026 is a Thursday: which one was meant?
        "Party on Sunday the 8th of November.",  # names its month already
        "We went there on Sunday the 27th.",  # told in the past
    ],
)
def test_a_weekday_and_day_that_disagree_or_point_back_get_no_date(text: str) -> None:
    assert anchor_local_times(text, datetime(2026, 9, 17, 9, 0)) == text


def test_on_the_14th_is_this_months_said_on_the_3rd_and_next_months_said_on_the_20th() -> None:
    third = datetime(2026, 11, 3, 21, 0, tzinfo=NEW_YORK)
    twentieth = datetime(2026, 11, 20, 21, 0, tzinfo=NEW_YORK)
    assert anchor_local_times("Physio on the 14th", third) == "Physio on the 14th (14 November 2026)"
    assert anchor_local_times("Physio on the 14th", twentieth) == "Physio on the 14th (14 December 2026)"
    new_year = datetime(2026, 12, 20, 9, 0, tzinfo=NEW_YORK)
    assert anchor_local_times("Physio on the 14th", new_year) == "Physio on the 14th (14 January 2027)"


@pytest.mark.parametrize(
    "text",
    [
        "I saw the doctor on the 1st",  # told in the past: the 1st before; no date is better than a wrong one
        "We went there on Tuesday",
        "Room on the 2nd floor",
        "November the 14th",  # names its month already
        "on the 14th of November",
        "next Tuesday (8 December 2026)",  # already anchored
        "The sausage sizzle is on Saturday 14 November, 11 till 2",  # its date follows
        "It moves to Sunday, 15 November",
        "Boots is open Monday to Saturday, 9 till 6",  # a range of days
        "The office is open on Monday to Friday",
        "Lane 4 is theirs on Tuesday and Friday mornings",  # every week
        "Masters swim on Wednesday nights",
        "Swimming every Friday at 6",
        "Staff meeting every second Thursday at 8",
        "Training Tuesday and Friday after school",  # no time: may come back every week
        "It was Friday at 3 that we met",  # told in the past
    ],
)
def test_what_may_point_back_or_is_no_day_is_left_without_a_terminal_date(text: str) -> None:
    assert anchor_local_times(text, THURSDAY_9PM) == text


LOCOMO_NOTE = "We go camping next Tuesday, on Saturday and on the 14th; the dog comes tonight, tomorrow too."


def test_a_locomo_prompt_keeps_its_anchors_byte_for_byte() -> None:
    """The LoCoMo evaluation (kiosk.eval.answering) gives UTC session times to the shared prompt: its anchors stay
    those of anchor_relative_times (answers are cached by prompt), whatever the terminal's time zone."""
    said = parse_session_date("10:37 pm on 27 June, 2023", "test")
    note = Note(None, 1, "face", LOCOMO_NOTE, said, context="Caroline said this on 27 June 2023.", embedding=None)
    _, user = answer_request("When is camping?", [note], "Caroline")
    assert user["content"].split("<notes>\n", 1)[1].split("\n</notes>", 1)[0] == (
        "[27 June 2023]\n"
        "Caroline: We go camping next Tuesday (the Tuesday after 27 June 2023), on Saturday and on the 14th; "
        "the dog comes tonight (27 June 2023), tomorrow (28 June 2023) too."
    )
