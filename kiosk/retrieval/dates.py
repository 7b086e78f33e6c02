"""Calendar dates named in a question ("on 13 March, 2023", "in mid-August 2023") as time windows for retrieval.

A person who names a date wants what was said then, or told soon after: a note's time is when it was said, and a
note said a few days after an event tells it as "yesterday" or "last week". So a window starts a day before the
named day (or part of a month) and runs on for `after_days` more days. Only dates with a year count: "in June"
alone could be any June.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        (
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
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PART = r"(?:(?P<part>early|mid|late|end of|the end of|beginning of|the beginning of)[\s-]+)?"
_PATTERNS = (
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_PART}{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
)
_PART_DAYS = {"early": (1, 10), "beginning of": (1, 10), "mid": (10, 20), "late": (20, 31), "end of": (20, 31)}


@dataclass(frozen=True)
class Window:
    """[start, end) in UTC."""

    start: datetime
    end: datetime

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def _month_end(year: int, month: int) -> datetime:
    return datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)


def _span(match: re.Match[str]) -> tuple[datetime, datetime] | None:
    """The named day or part of a month as [first day, day after the last), or None for an impossible date."""
    fields = match.groupdict()
    year, month = int(fields["year"]), MONTHS[fields["month"].lower()]
    try:
        if fields.get("day"):
            day = datetime(year, month, int(fields["day"]), tzinfo=UTC)
            return day, day + timedelta(days=1)
        first, after = datetime(year, month, 1, tzinfo=UTC), _month_end(year, month)
    except ValueError:
        return None
    part = (fields.get("part") or "").lower().removeprefix("the ")
    if part in _PART_DAYS:
        low, high = _PART_DAYS[part]
        return first + timedelta(days=low - 1), min(after, first + timedelta(days=high))
    return first, after


def date_windows(text: str, after_days: int) -> list[Window]:
    """The windows of every dated mention in `text`, earliest first; none when it names no date with a
    year. A day mentioned inside a longer match ("13 March, 2023" also reads as "March, 2023") counts once."""
    taken: list[tuple[int, int]] = []
    windows: list[Window] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            span = _span(match)
            if span is None:
                continue
            taken.append((match.start(), match.end()))
            windows.append(Window(span[0] - timedelta(days=1), span[1] + timedelta(days=after_days)))
    return sorted(windows, key=lambda window: window.start)
