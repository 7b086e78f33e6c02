"""Calendar dates named in a question ("on 13 March, 2023", "in mid-August 2023") as time windows for retrieval.

A person who names a date wants what was said then, or told soon after: a note's time is when it was said, and a
note said a few days after an event tells it as "yesterday" or "last week". So a window starts a day before the
named day (or part of a month) and runs on for `after_days` more days. Only dates with a year count: "in June"
alone could be any June.

At the terminal a question also has a local time (`asked_at`, kiosk.local_time), and a family names days without a
year: "on the 14th", "next Tuesday", "14 November", "tomorrow". Those are resolved against the question's local
day: told in the past ("what did the doctor say on the 14th?") to the latest such day up to it, otherwise to the
next one from it. Without `asked_at` (the LoCoMo replay) only dates with a year count, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from kiosk.local_time import MONTHS, WEEKDAYS, last_day_of_month, last_weekday, next_day_of_month, next_weekday

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
    """[start, end), aware (UTC for a date with a year, the question's zone for a day without one)."""

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


_YEARLESS = (
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?!\w)", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+(?:the\s+)?(?P<day>[0-3]?\d)(?:st|nd|rd|th)?\b", re.IGNORECASE),
    # "the 14th" where a date stands, before the question's end or a small word ("the 2nd floor" is none)
    re.compile(
        r"\bthe\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)(?=\s*(?:[.,;:!?]|$)|\s+(?:at|in|on|for|and|or|to|with|is|was)\b)",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:(?P<side>next|last|this|on)\s+)?(?P<weekday>" + "|".join(WEEKDAYS) + r")\b", re.IGNORECASE),
    re.compile(r"\b(?P<relative>today|tonight|this (?:morning|afternoon|evening)|tomorrow|yesterday)\b", re.IGNORECASE),
)
_RELATIVE_DAYS = {"yesterday": -1, "tomorrow": 1}
_PAST = re.compile(r"\b(?:did|was|were|had|went|got|happened|said|told|saw|met|last|ago)\b", re.IGNORECASE)


def _month_day(month: int, day: int, asked: date, past: bool) -> date | None:
    """`day` `month` of the asked day's year, or of the year before (past) / after (otherwise) when it is not
    on the right side of the asked day."""
    for year in (asked.year, asked.year - 1 if past else asked.year + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if (candidate <= asked) if past else (candidate >= asked):
            return candidate
    return None


def _yearless_day(fields: dict[str, str | None], asked: date, past: bool) -> date | None:
    if fields.get("relative"):
        return asked + timedelta(days=_RELATIVE_DAYS.get(str(fields["relative"]).lower(), 0))
    if fields.get("weekday"):
        weekday = WEEKDAYS.index(str(fields["weekday"]).lower())
        side = (fields.get("side") or "").lower()
        if side == "next" or (side != "last" and not past):
            return next_weekday(asked, weekday)
        return last_weekday(asked, weekday)
    day = int(str(fields["day"]))
    if fields.get("month"):
        return _month_day(MONTHS[str(fields["month"]).lower()], day, asked, past)
    return last_day_of_month(asked, day) if past else next_day_of_month(asked, day)


def _overlaps(match: re.Match[str], taken: list[tuple[int, int]]) -> bool:
    return any(start < match.end() and match.start() < end for start, end in taken)


def _dated(text: str) -> list[tuple[re.Match[str], tuple[datetime, datetime]]]:
    """The mentions of dates with a year and their spans; a mention inside a longer one counts once."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[re.Match[str], tuple[datetime, datetime]]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = None if _overlaps(match, taken) else _span(match)
            if span is not None:
                taken.append((match.start(), match.end()))
                found.append((match, span))
    return found


def named_days(text: str, asked_at: datetime) -> list[date]:
    """The local days `text` names without a year, resolved against `asked_at` (the question's local time)."""
    taken = [(match.start(), match.end()) for match, _ in _dated(text)]
    past = bool(_PAST.search(text))
    days: list[date] = []
    for pattern in _YEARLESS:
        for match in pattern.finditer(text):
            if _overlaps(match, taken):
                continue
            try:
                day = _yearless_day(match.groupdict(), asked_at.date(), past)
            except ValueError:
                day = None
            if day is not None:
                taken.append((match.start(), match.end()))
                days.append(day)
    return sorted(set(days))


def local_midnight(day: date, like: datetime) -> datetime:
    """The start of `day` in the time zone of `like`."""
    return datetime.combine(day, time(), tzinfo=like.tzinfo)


def date_windows(text: str, after_days: int, asked_at: datetime | None = None) -> list[Window]:
    """The windows of every dated mention in `text`, earliest first; none when it names no date with a
    year (nor, given the question's local time `asked_at`, a day without one). A day mentioned inside a longer
    match ("13 March, 2023" also reads as "March, 2023") counts once."""
    windows = [Window(start - timedelta(days=1), end + timedelta(days=after_days)) for _, (start, end) in _dated(text)]
    if asked_at is not None:
        for day in named_days(text, asked_at):
            start = local_midnight(day, asked_at)
            windows.append(Window(start - timedelta(days=1), start + timedelta(days=1 + after_days)))
    return sorted(windows, key=lambda window: window.start)
