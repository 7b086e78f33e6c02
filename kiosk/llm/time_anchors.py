"""Relative times in a note, anchored to the day the note was said.

"I went to the support group yesterday" means nothing a month later unless the reader works out which day
that was, and a 0.5B model does not (it answers "yesterday"). Before a note goes into the answer prompt each
relative expression gets its anchor in brackets, computed from the note's own date:
"yesterday (6 May 2023)", "last Friday (the Friday before 22 October 2023)", "two weeks ago (two weeks before
11 August 2023)", "last month (September 2023)". Weekdays without "last" / "next" ("on Saturday") are left
alone: they may point either way.

At the terminal (`anchor_local_times`) people mostly tell what is coming, so the days a family names get a concrete
date too: "next Tuesday", "on Tuesday", "this Tuesday", "Tuesday at 10" (the first Tuesday after the day said), "on
the 14th" (the next 14th from that day, this month or the next), "Sunday the 27th" (that 27th, only if it is a
Sunday); a weekday whose date follows ("on Saturday 14 November"), that bounds a range ("Monday to Saturday") or
comes back every week ("on Friday mornings", "every Friday at 6", "every other Thursday at 8") gets none. Its `said`
is the note's local time in the terminal's zone (kiosk.local_time): "tonight" said at 9 pm in New York is that day
there, not the next day in UTC. The LoCoMo evaluation keeps `anchor_relative_times` alone, so its prompts (and the
answers cached by prompt) do not change.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from kiosk.local_time import MONTHS, WEEKDAYS, Zone, local, next_day_of_month, next_weekday
from kiosk.memory.note import Note

_WEEKDAY_NAMES = "|".join(WEEKDAYS)  # regex alternatives
_MONTH_NAMES = "|".join(MONTHS)

# What an anchor looks like in a note line, with the space before it: "next Tuesday (13 October 2026)".
ANCHOR = re.compile(r"\s*\([^()]*\)")
_COUNTS = r"\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|couple of|few"
_SMALL_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}

_PATTERN = re.compile(
    r"\b(?:"
    r"(?P<day_before>the day before yesterday)"
    r"|(?P<day_after>the day after tomorrow)"
    r"|(?P<yesterday>yesterday|last night)"
    r"|(?P<today>today|tonight|this morning|this afternoon|this evening)"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?:last|this past|past) (?P<last_weekday>" + _WEEKDAY_NAMES + r")"
    r"|next (?P<next_weekday>" + _WEEKDAY_NAMES + r")"
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


def day_text(moment: date) -> str:
    return f"{moment.day} {moment:%B %Y}"


def _month_shift(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


_DAY_OFFSETS = {"day_before": -2, "yesterday": -1, "today": 0, "tomorrow": 1, "day_after": 2}
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


_ORDINAL = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)"
# "the 14th" is a date only where a date can stand: "the 2nd floor" or "the 14th of May" is not one.
_FOLLOWERS = (
    "at|in|on|for|and|or|to|then|so|but|too|if|when|with|is|we|i|you|he|she|they|it|morning|afternoon|evening|night"
)
_DATE_FOLLOWS = rf"(?=\s*(?:[.,;:!?)]|$)|\s+(?:{_FOLLOWERS})\b)"
_NOT_A_MONTH = r"(?!\s+of\s+(?:" + _MONTH_NAMES + r")\b)"
# "Sunday the 27th" is one day: the 27th, when it is a Sunday. Anchored apart, "Sunday" would get the next Sunday.
_DATED_WEEKDAY = (
    r"(?:(?:next|this|on|by|until|to) )?(?P<dated_weekday>" + _WEEKDAY_NAMES + r"),? the "
    r"(?P<dated_day>[0-3]?\d)(?:st|nd|rd|th)(?P<dated_month>\s+of\s+(?:" + _MONTH_NAMES + r"))?"
)
_LOCAL_PATTERN = re.compile(
    r"\b(?:" + _DATED_WEEKDAY + r"|next (?P<next_weekday>" + _WEEKDAY_NAMES + r")"
    r"|(?:this|on|by|until|to) (?P<weekday>" + _WEEKDAY_NAMES + r")"
    # A bare weekday with its time: "Staff meeting Friday at 1:30", "British Gas are coming Friday between 8 and 1".
    r"|(?<!every )(?<!each )(?<!other )(?<!second )(?<!alternate )(?<!last )(?<!past )"
    r"(?P<timed_weekday>" + _WEEKDAY_NAMES + r")(?=\s+(?:at|between|from)\s+(?:\d|half|quarter|noon|midday))"
    r"|the " + _ORDINAL + _NOT_A_MONTH + _DATE_FOLLOWS + r")\b(?! \()",
    re.IGNORECASE,
)
_MONTH_BEFORE = re.compile(r"\b(?:" + _MONTH_NAMES + r")\.?,?\s*$", re.IGNORECASE)
# "On Tuesday" or "on the 1st" in a sentence told in the past points back, and a wrong date is worse than none.
_PAST = re.compile(
    r"\b(?:was|were|went|did|had|saw|met|came|got|took|gave|told|said|bought|ate|left|visited|called|ago)\b",
    re.IGNORECASE,
)


# "I've got the eye doctor on the 3rd" is "I have": its "got" tells nothing of the past.
_HAVE_GOT = re.compile(r"(?:['’]ve|['’]s|\bhave|\bhas)\s+got\b", re.IGNORECASE)


def _told_in_the_past(text: str, match: re.Match[str]) -> bool:
    return _PAST.search(_HAVE_GOT.sub(" have", _sentence_around(text, match))) is not None


def _sentence_around(text: str, match: re.Match[str]) -> str:
    start = max(text.rfind(mark, 0, match.start()) for mark in ".!?\n") + 1
    ends = [end for end in (text.find(mark, match.end()) for mark in ".!?\n") if end >= 0]
    return text[start : min(ends, default=len(text))]


# A weekday that is no one day: its date follows ("Saturday 14 November"), it ends or starts a range ("Monday to
# Saturday"), or it comes back every week ("Friday mornings", "Tuesday and Friday mornings").
_OWN_DATE_AFTER = re.compile(
    rf"^,?\s+(?:the\s+)?[0-3]?\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH_NAMES})\b|^,?\s+(?:{_MONTH_NAMES})\s+[0-3]?\d\b",
    re.IGNORECASE,
)
_RANGE_AFTER = re.compile(rf"^\s*(?:to|through|till|until|-|–)\s*(?:{_WEEKDAY_NAMES})\b", re.IGNORECASE)
_RANGE_BEFORE = re.compile(rf"\b(?:{_WEEKDAY_NAMES})\s*(?:-|–)?\s*$", re.IGNORECASE)
_EVERY_WEEK_AFTER = re.compile(
    rf"^(?:\s+(?:and|or|&)\s+(?:{_WEEKDAY_NAMES}))?\s+(?:mornings|afternoons|evenings|nights|lunchtimes)\b",
    re.IGNORECASE,
)


def _no_one_day(match: re.Match[str], text: str) -> bool:
    """True when the weekday `match` names is no single day to anchor (see _OWN_DATE_AFTER above)."""
    after, before = text[match.end() :], text[: match.start()]
    if _OWN_DATE_AFTER.search(after) or _RANGE_AFTER.search(after) or _EVERY_WEEK_AFTER.search(after):
        return True
    return match.group(0).lower().startswith("to ") and _RANGE_BEFORE.search(before) is not None


def _local_anchor(match: re.Match[str], text: str, said: date) -> str:
    groups, words = match.groupdict(), match.group(0)
    if groups["dated_weekday"]:
        return _dated_weekday_anchor(groups, words, _told_in_the_past(text, match), said)
    if (groups["next_weekday"] or groups["weekday"] or groups["timed_weekday"]) and _no_one_day(match, text):
        return words
    if groups["next_weekday"]:
        return f"{words} ({day_text(next_weekday(said, WEEKDAYS.index(groups['next_weekday'].lower())))})"
    if _told_in_the_past(text, match):
        return words
    if weekday := groups["weekday"] or groups["timed_weekday"]:
        return f"{words} ({day_text(next_weekday(said, WEEKDAYS.index(weekday.lower())))})"
    if _MONTH_BEFORE.search(text[: match.start()]):  # "November the 14th" already names its month
        return words
    resolved = next_day_of_month(said, int(groups["day"]))
    return f"{words} ({day_text(resolved)})" if resolved else words


def _dated_weekday_anchor(groups: dict[str, str | None], words: str, in_the_past: bool, said: date) -> str:
    """A weekday with its day of the month ("Sunday the 27th") gets the next 27th's date when that day is a
    Sunday; told in the past, with its month named, or with a weekday the day does not fall on, it gets none: no
    date is better than a wrong one."""
    if in_the_past or groups["dated_month"]:
        return words
    resolved = next_day_of_month(said, int(groups["dated_day"] or 0))
    weekday = WEEKDAYS.index((groups["dated_weekday"] or "").lower())
    return f"{words} ({day_text(resolved)})" if resolved and resolved.weekday() == weekday else words


def anchor_local_times(text: str, said: datetime) -> str:
    """`text` anchored as at the terminal: the days named by weekday or day of the month get their date, then
    every other relative time as `anchor_relative_times` does; `said` is the note's local time."""
    day = said.date()
    named = _LOCAL_PATTERN.sub(lambda match: _local_anchor(match, text, day), text)
    return anchor_relative_times(named, said)


def terminal_line(note: Note, zone: Zone) -> tuple[datetime, str, str]:
    """A note as the terminal's prompt gives it: its local time in `zone`, its words anchored from that time."""
    said = local(note.timestamp, zone)
    return said, anchor_local_times(note.content, said), note.context
