"""An answer giving only days already past, to a question about when something is or will be, becomes "I don't
know" (issue #36).

Asked "When's my next warfarin blood test?" on 10 November, the 0.5B model answered "29 October 2026": the day the
clinic changed the dose, in the line that said "retest in about two weeks". Asked when something is, a day that
has gone is never the answer: the appointment it names is over, or the model took the day from another line. On
the household set every such answer was wrong (four harmful, two to questions the notes do not answer).

Only days written with their year are judged ("29 October 2026", as the notes' dates in brackets are written):
"the 24th" or "24 October" may mean the next one. The day the question is asked is the terminal's local day; a
replay with no terminal clock (LoCoMo) passes none, and nothing is judged.
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import date

from kiosk.llm.answer_form import asks_when_it_is, says_unknown
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


def checked_past_days(question: str, answer: str, asked_on: date | None) -> str | None:
    """ "I don't know" for an answer naming only days already past (names_only_past_days); None keeps it."""
    if asked_on is None or not names_only_past_days(question, answer, asked_on):
        return None
    return UNKNOWN_ANSWER
