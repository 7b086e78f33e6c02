"""The terminal's clock: instants are stored in UTC, but people read and say dates in the terminal's time zone.

"Tonight" said at 9 pm in New York is that evening there, although it is already tomorrow in UTC; so every date a
person sees, and every relative date resolved, uses the note's local time in the zone `ui.time_zone` names (the
system's when it is empty).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTH_FORMS = (
    ("january", "jan"),
    ("february", "feb"),
    ("march", "mar"),
    ("april", "apr"),
    ("may",),
    ("june", "jun"),
    ("july", "jul"),
    ("august", "aug"),
    ("september", "sep", "sept"),
    ("october", "oct"),
    ("november", "nov"),
    ("december", "dec"),
)
MONTH_NAMES = tuple(forms[0] for forms in _MONTH_FORMS)
"""The twelve month names, lower case, January first."""
MONTHS = {name: number for number, names in enumerate(_MONTH_FORMS, start=1) for name in names}
"""Month names and their usual abbreviations -> month number."""
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
"""Weekday names, lower case, in datetime.weekday() order."""

_MONTH = "|".join(MONTH_NAMES)
DAY_OF_MONTH = re.compile(
    rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH})\b|"
    rf"\b(?P<month_first>{_MONTH})\s+(?P<day_after>\d{{1,2}})(?:st|nd|rd|th)?\b|"
    rf"\bthe\s+(?P<day_alone>\d{{1,2}})(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?(?:{_MONTH})\b)",
    re.IGNORECASE,
)
"""A day of the month as people say it (days_of_month reads its groups)."""


def days_of_month(text: str) -> list[tuple[int, str | None]]:
    """The days of the month `text` names, each with its month (lower case) when it is named: "13 October 2026",
    "the 3rd of May", "October 16th"; "the 14th" has none. A bare number is no day."""
    days: list[tuple[int, str | None]] = []
    for match in DAY_OF_MONTH.finditer(text):
        day = match.group("day") or match.group("day_after") or match.group("day_alone")
        month = match.group("month") or match.group("month_first")
        days.append((int(day), month.lower() if month else None))
    return days


Zone = tzinfo | None
"""A time zone; None is the system's (resolved per instant, so its daylight-saving changes are followed)."""


def check_zone_name(name: str) -> str:
    """`name` when it is empty (the system's zone) or an IANA zone this machine knows; ValueError otherwise."""
    if name:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin'") from exc
    return name


def zone_named(name: str) -> Zone:
    """The zone of an IANA name; None (the system's) for an empty name."""
    return ZoneInfo(check_zone_name(name)) if name else None


def local(moment: datetime, zone: Zone = None) -> datetime:
    """`moment` as the terminal's wall time (aware); a naive moment is read as UTC, the store's convention."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(zone)


def local_now(zone: Zone = None) -> datetime:
    """Now, as the terminal's wall time (aware)."""
    return local(datetime.now(UTC), zone)


@dataclass(frozen=True)
class TerminalClock:
    """The wall clock questions are asked by, in its zone. `fixed` pins the instant (tests, evaluations). A replay
    with no terminal (LoCoMo) sets `resolves_yearless_days` False: days its questions name without a year stay
    unresolved, so its retrieval stays as measured."""

    zone: Zone = None
    fixed: datetime | None = None
    resolves_yearless_days: bool = True

    def __call__(self) -> datetime:
        return local(self.fixed, self.zone) if self.fixed else local_now(self.zone)


def next_weekday(said: date, weekday: int) -> date:
    """The first day after `said` that falls on `weekday` (Monday = 0): a week later on that weekday itself."""
    return said + timedelta(days=(weekday - said.weekday() - 1) % 7 + 1)


def next_day_of_month(said: date, day: int) -> date | None:
    """The first `day` of a month on or after `said`: this month's, else the next month's that has it."""
    year, month = said.year, said.month
    for _ in range(12):
        if day >= (said.day if (year, month) == (said.year, said.month) else 1):
            try:
                return date(year, month, day)
            except ValueError:
                pass
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def last_weekday(said: date, weekday: int) -> date:
    """The last day before `said` that falls on `weekday` (Monday = 0): a week earlier on that weekday itself."""
    return said - timedelta(days=(said.weekday() - weekday - 1) % 7 + 1)


def last_day_of_month(said: date, day: int) -> date | None:
    """The last `day` of a month on or before `said`: this month's, else the latest earlier month's that has it."""
    year, month = said.year, said.month
    for _ in range(12):
        if day <= (said.day if (year, month) == (said.year, said.month) else 31):
            try:
                return date(year, month, day)
            except ValueError:
                pass
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
    return None


def local_stamp(iso: str, zone: Zone = None) -> str:
    """An ISO instant (a note's stored timestamp) as the terminal's wall time to the minute: '2026-12-03T21:00'."""
    return local(datetime.fromisoformat(iso), zone).isoformat()[:16]
