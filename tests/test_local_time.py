"""The terminal's clock and time zone (kiosk.local_time) and the `ui.time_zone` setting."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from kiosk.config import load_config
from kiosk.errors import ConfigError
from kiosk.local_time import (
    TerminalClock,
    days_of_month,
    last_day_of_month,
    last_weekday,
    local,
    local_stamp,
    next_day_of_month,
    next_weekday,
    zone_named,
)

NEW_YORK = ZoneInfo("America/New_York")
NINE_PM_IN_NEW_YORK = datetime(2026, 12, 4, 2, 0, tzinfo=UTC)  # Thursday 3 December 2026, 21:00 in UTC-5


def test_an_instant_is_read_in_the_terminals_zone_and_a_naive_one_as_utc() -> None:
    assert local(NINE_PM_IN_NEW_YORK, NEW_YORK).isoformat() == "2026-12-03T21:00:00-05:00"
    assert local(datetime(2026, 12, 4, 2, 0), NEW_YORK) == local(NINE_PM_IN_NEW_YORK, NEW_YORK)
    assert local_stamp(NINE_PM_IN_NEW_YORK.isoformat(), NEW_YORK) == "2026-12-03T21:00"
    assert TerminalClock(NEW_YORK, fixed=NINE_PM_IN_NEW_YORK)().date() == date(2026, 12, 3)
    assert TerminalClock(NEW_YORK)().utcoffset() is not None


def test_an_empty_zone_name_is_the_systems_and_an_unknown_one_is_a_config_error() -> None:
    assert zone_named("") is None
    assert zone_named("Europe/Berlin") == ZoneInfo("Europe/Berlin")
    assert load_config(environ={}).ui.time_zone == ""
    assert load_config(environ={"KIOSK_UI__TIME_ZONE": "America/New_York"}).ui.time_zone == "America/New_York"
    for wrong in ("Mars/Olympus", "../etc/passwd", "EST5EDT/../x"):
        with pytest.raises(ConfigError, match=r"ui\.time_zone.*unknown time zone"):
            load_config(environ={"KIOSK_UI__TIME_ZONE": wrong})


def test_the_next_and_last_weekday_and_day_of_the_month() -> None:
    thursday = date(2026, 12, 3)
    assert next_weekday(thursday, 1) == date(2026, 12, 8)  # Tuesday
    assert next_weekday(thursday, 3) == date(2026, 12, 10)  # a Thursday: a week on
    assert last_weekday(thursday, 4) == date(2026, 11, 27)  # Friday
    assert next_day_of_month(date(2026, 11, 3), 14) == date(2026, 11, 14)
    assert next_day_of_month(date(2026, 11, 20), 14) == date(2026, 12, 14)
    assert next_day_of_month(date(2026, 11, 14), 14) == date(2026, 11, 14)  # that day itself
    assert next_day_of_month(date(2026, 12, 20), 14) == date(2027, 1, 14)
    assert next_day_of_month(date(2026, 11, 3), 31) == date(2026, 12, 31)  # November has no 31st
    assert last_day_of_month(date(2026, 11, 3), 14) == date(2026, 10, 14)
    assert last_day_of_month(date(2026, 3, 3), 30) == date(2026, 1, 30)  # February has no 30th


def test_days_of_the_month_are_read_as_people_say_them() -> None:
    assert days_of_month("13 October 2026, the 3rd of May, October 16th, the 14th") == [
        (13, "october"),
        (3, "may"),
        (16, "october"),
        (14, None),
    ]
    assert days_of_month("at 3:45 on Tuesday, 500 mg") == []
