"""Relative times in a note, anchored to the day the note was said.

"I went to the support group yesterday" means nothing a month later unless the reader works out which day
that was, and a 0.5B model does not (it answers "yesterday"). Before a note goes into the answer prompt each
relative expression gets its anchor in brackets, computed from the note's own date:
"yesterday (6 May 2023)", "last Friday (the Friday before 22 October 2023)", "two weeks ago (two weeks before
11 August 2023)", "last month (September 2023)". Weekdays without "last" / "next" ("on Saturday") are left
alone: they may point either way.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = r"\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|couple of|few"
_SMALL_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}

_PATTERN = re.compile(
    r"\b(?:"
    r"(?P<day_before>the day before yesterday)"
    r"|(?P<yesterday>yesterday|last night)"
    r"|(?P<today>today|tonight|this morning|this afternoon|this evening)"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?:last|this past|past) (?P<last_weekday>" + "|".join(_WEEKDAYS) + r")"
    r"|next (?P<next_weekday>" + "|".join(_WEEKDAYS) + r")"
    r"|(?P<last_span>(?:last|this past|past) (?:weekend|week))"
    r"|(?P<next_span>next (?:weekend|week))"
    r"|(?P<last_month>last month)"
    r"|(?P<this_month>(?:earlier )?this month)"
    r"|(?P<next_month>next month)"
    r"|(?P<last_year>last year)"
    r"|(?P<this_year>(?:earlier )?this year)"
    r"|(?P<next_year>next year)"
    r"|(?P<ago>(?P<count>" + _COUNTS + r") (?P<unit>day|week|month|year)s? ago)"
    r")\b(?! \()",
    re.IGNORECASE,
)


def day_text(moment: datetime) -> str:
    return f"{moment.day} {moment:%B %Y}"


def _month_shift(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


_DAY_OFFSETS = {"day_before": -2, "yesterday": -1, "today": 0, "tomorrow": 1}
_MONTH_OFFSETS = {"last_month": -1, "this_month": 0, "next_month": 1}
_YEAR_OFFSETS = {"last_year": -1, "this_year": 0, "next_year": 1}
_SIDES = {"last_weekday": "before", "next_weekday": "after", "last_span": "before", "next_span": "after"}


def _anchor(match: re.Match[str], said: datetime) -> str:
    groups = match.groupdict()
    day = day_text(said)
    for name, days in _DAY_OFFSETS.items():
        if groups[name]:
            return day_text(said + timedelta(days=days))
    for name, side in _SIDES.items():
        if groups[name]:
            what = groups[name].split()[-1]
            what = what.capitalize() if name.endswith("weekday") else what.lower()
            return f"the {what} {side} {day}"
    for name, months in _MONTH_OFFSETS.items():
        if groups[name]:
            return f"{_month_shift(said, months):%B %Y}"
    for name, years in _YEAR_OFFSETS.items():
        if groups[name]:
            return str(said.year + years)
    count, unit = groups["count"].lower(), groups["unit"].lower()
    number = int(count) if count.isdigit() else _SMALL_NUMBERS.get(count)
    if unit == "day" and number is not None and number <= 7:
        return day_text(said - timedelta(days=number))
    if unit == "year" and number is not None:
        return str(said.year - number)
    return f"{groups['ago'][: -len(' ago')].lower()} before {day}"


def anchor_relative_times(text: str, said: datetime) -> str:
    """`text` with each relative time followed by its anchor in brackets, from the day it was said."""
    return _PATTERN.sub(lambda match: f"{match.group(0)} ({_anchor(match, said)})", text)
