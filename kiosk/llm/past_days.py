"""An answer giving only days already past, to a question about when something is or will be, becomes "I don't
know" (issue #36).

Asked "When's my next warfarin blood test?" on 10 November, the 0.5B model answered "29 October 2026": the day the
clinic changed the dose, in the line that said "retest in about two weeks". Asked when something is, a day that
has gone is never the answer: the appointment it names is over, or the model took the day from another line. On
the household set every such answer was wrong (four harmful, two to questions the notes do not answer).

Likewise a question naming its span ("this week", "next week", "today", "tomorrow", "tonight") is not answered by
days all outside it: asked on Monday 9 November "Which nights am I working this week?", "Tuesday the 17th (17
November 2026)" came from another line (weeks run Monday to Sunday).

Only days written with their year are judged ("29 October 2026", as the notes' dates in brackets are written):
"the 24th" or "24 October" may mean the next one. The day the question is asked is the terminal's local day; a
replay with no terminal clock (LoCoMo) passes none, and nothing is judged.
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import date, timedelta

from kiosk.llm.answer_form import asks_when_it_is, asks_yes_or_no, offers_a_choice, says_unknown
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.local_time import DAY_OF_MONTH, MONTH_NAMES, days_of_month

_WITH_YEAR = re.compile(rf"(?:{DAY_OF_MONTH.pattern})\s*,?\s*(?P<year>(?:19|20)\d{{2}})\b", re.IGNORECASE)


def days_with_year(text: str) -> list[date]:
    """The days `text` names with their year: "29 October 2026", "the 3rd of May, 2027", "October 16 2026"."""
    days = []
    for match in _WITH_YEAR.finditer(text):
        for day, month in days_of_month(match.group(0)):
            if month:
                with suppress(ValueError):  # "31 September": no such day, nothing to judge
                    days.append(date(int(match.group("year")), MONTH_NAMES.index(month) + 1, day))
    return days


def names_only_past_days(question: str, answer: str, asked_on: date) -> bool:
    """True when `question` asks when something is or will be and every day `answer` names with its year is
    before `asked_on` (see the module's docstring)."""
    if says_unknown(answer) or not asks_when_it_is(question):
        return False
    days = days_with_year(answer)
    return bool(days) and all(day < asked_on for day in days)


_SPAN = re.compile(r"\b(?P<span>this\s+week|next\s+week|today|tonight|tomorrow)\b", re.IGNORECASE)


def asked_span(question: str, asked_on: date) -> tuple[date, date] | None:
    """The first and last day of the span `question` names ("this week" asked on Wednesday 11 November: Monday 9 to
    Sunday 15 November); None when it names none or more than one."""
    spans = {" ".join(match.group("span").lower().split()) for match in _SPAN.finditer(question)}
    if len(spans) != 1:
        return None
    span = spans.pop()
    if span in ("today", "tonight"):
        return asked_on, asked_on
    if span == "tomorrow":
        return asked_on + timedelta(days=1), asked_on + timedelta(days=1)
    monday = asked_on - timedelta(days=asked_on.weekday()) + timedelta(weeks=1 if span == "next week" else 0)
    return monday, monday + timedelta(days=6)


def names_only_days_outside_the_span(question: str, answer: str, asked_on: date) -> bool:
    """True when `question` names a span (asked_span) and every day `answer` names with its year is outside it."""
    span = asked_span(question, asked_on)
    if span is None or says_unknown(answer) or asks_yes_or_no(question) or offers_a_choice(question):
        return False
    days = days_with_year(answer)
    return bool(days) and all(not span[0] <= day <= span[1] for day in days)


def checked_past_days(question: str, answer: str, asked_on: date | None) -> str | None:
    """ "I don't know" for an answer naming only days already past (names_only_past_days) or only days outside the
    span the question names (names_only_days_outside_the_span); None keeps it."""
    if asked_on is None:
        return None
    if names_only_past_days(question, answer, asked_on) or names_only_days_outside_the_span(question, answer, asked_on):
        return UNKNOWN_ANSWER
    return None
