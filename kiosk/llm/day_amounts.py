"""An amount for a named day that the notes give for other days becomes "I don't know" (issue #36).

Doses split by weekday are common (warfarin above all: "2.5 mg on weekdays and 3 mg on Saturday and Sunday"), and
the 0.5B model reads such a line for one number, often the wrong day's: "How much warfarin does Dadi take on a
Wednesday?" -> "3 mg". When the question names a day and the newest note line about it ties two or more amounts to
days, the answer must give the amount tied to that day. A yes/no or either/or answer is left alone.
"""

from __future__ import annotations

import re
from datetime import date

from kiosk.llm.answer_form import asks_yes_or_no, offers_a_choice
from kiosk.llm.answer_kinds import as_number
from kiosk.llm.compared_words import NUMBER_WORDS
from kiosk.llm.days_named import filed_on
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.question_lines import SENTENCE_OR_SEMICOLON_BREAK
from kiosk.llm.unsupported import supporting_dated_lines, this_side_of
from kiosk.local_time import MONTH_NAMES, WEEKDAYS

_WORKING_DAYS = frozenset(WEEKDAYS[:5])
_WEEKEND_DAYS = frozenset(WEEKDAYS[5:])
_DAY_WORDS: dict[str, frozenset[str]] = {
    **{day: frozenset({day}) for day in WEEKDAYS},
    **{f"{day}s": frozenset({day}) for day in WEEKDAYS},
    "weekday": _WORKING_DAYS,
    "weekdays": _WORKING_DAYS,
    "weekend": _WEEKEND_DAYS,
    "weekends": _WEEKEND_DAYS,
}
_SPANS = r"(?:minute|hour|day|night|week|month|year)s?"
_NUMBER = "|".join([r"\d+(?:[.,]\d+)?", *NUMBER_WORDS])
# An amount ("2.5 mg", "three brown tablets", "two and a half"; not a time of day or a date) or a day word
# ("weekdays", "Saturday").
_PIECE = re.compile(
    rf"(?<!\bat )\b(?P<amount>(?:{_NUMBER})(?:\s+and\s+a\s+half)?)\b"
    rf"(?![:.]\d|\s*(?:am|pm|a\.m\.|p\.m\.|o'clock|times|{_SPANS}|{'|'.join(MONTH_NAMES)})\b)"
    rf"|\b(?P<day>{'|'.join(_DAY_WORDS)})\b",
    re.IGNORECASE,
)
_ANSWER_AMOUNT = re.compile(rf"\b(?:{_NUMBER})(?:\s+and\s+a\s+half)?\b", re.IGNORECASE)
_ANCHOR = re.compile(r"\s\([^()]*\b\d{4}\)")  # the date kiosk.llm.time_anchors puts after "Saturday"


def amount_value(text: str) -> str:
    """An amount as compared here: "2.5", "2,5" and "two and a half" alike ("2:5", as_number writes it)."""
    first = text.split()[0].lower()
    whole = NUMBER_WORDS.get(first, first.replace(",", "."))
    if text.lower().endswith("and a half"):
        whole = f"{float(whole) + 0.5:g}"
    return as_number(whole)


def asked_days(question: str) -> frozenset[str]:
    """The weekdays `question` names, lower-case ("on a Wednesday" -> wednesday, "at weekends" -> saturday, sunday)."""
    days: set[str] = set()
    for word in re.findall(r"[A-Za-z]+", question):
        days |= _DAY_WORDS.get(word.lower(), frozenset())
    return frozenset(days)


def day_amounts(line: str) -> list[tuple[str, frozenset[str]]]:
    """The (amount, days) pairs `line` ties: each amount with the days named after it in its sentence, before the
    next amount ("2.5 mg on weekdays and stays on 3 mg on Saturday and Sunday"), else the days named just before
    it ("On weekdays 2.5 mg"); an amount with no days is left out."""
    pairs: list[tuple[str, frozenset[str]]] = []
    for sentence in SENTENCE_OR_SEMICOLON_BREAK.split(_ANCHOR.sub("", line)):
        pieces = [(match.lastgroup, match.group()) for match in _PIECE.finditer(sentence)]
        for index, (kind, text) in enumerate(pieces):
            if kind != "amount":
                continue
            after: set[str] = set()
            for later_kind, later in pieces[index + 1 :]:
                if later_kind == "amount":
                    break
                after |= _DAY_WORDS[later.lower()]
            before: set[str] = set()
            for earlier_kind, earlier in reversed(pieces[:index]):
                if earlier_kind == "amount":
                    break
                before |= _DAY_WORDS[earlier.lower()]
            days = after or before
            if days:
                pairs.append((amount_value(text), frozenset(days)))
    return pairs


def amount_for_days(question: str, notes: str) -> str | None:
    """The amount the newest note line about `question` ties to the day it names, when that line ties two or more
    amounts to days; None otherwise."""
    asked = asked_days(question)
    if not asked:
        return None
    dated = [
        (day, line) for day, line in supporting_dated_lines(question, notes) if this_side_of(question, line) == line
    ]
    dated.sort(key=lambda pair: filed_on(pair[0]) or date.min)
    for _, line in reversed(dated):
        pairs = day_amounts(line)
        if len({amount for amount, _ in pairs}) < 2:
            continue
        matching = {amount for amount, days in pairs if asked <= days}
        return next(iter(matching)) if len(matching) == 1 else None
    return None


def checked_day_amounts(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for an answer that does not give the amount the notes tie to the day the question names (see
    the module's docstring); None keeps the answer."""
    if asks_yes_or_no(question) or offers_a_choice(question):
        return None
    given = {amount_value(match.group()) for match in _ANSWER_AMOUNT.finditer(answer)}
    if not given:
        return None
    expected = amount_for_days(question, notes)
    return UNKNOWN_ANSWER if expected is not None and expected not in given else None
