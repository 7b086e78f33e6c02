"""A day the notes name only as when something is not becomes "I don't know" as when it is (issue #36).

"Sarah rang. She can't come on Wednesday now, she's coming Thursday at 3 instead." Asked "When is Sarah coming to
see me?", the 0.5B model gave Wednesday's date: the day the line names, but in a clause saying it is not then. A day
of the answer (its day of the month, or its weekday when it names none) that the notes about the question name only
a few words after a denying word ("can't", "not", "cancelled") does not answer when it is; a day named before it
is not judged so ("moved to Saturday the 31st because Uncle Emeka can't do Sunday" keeps the 31st).
A day said after "until" or "from" ("no swimming lessons until the 30th") tells when it is again, and is kept.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import asks_when_it_is
from kiosk.llm.compared_words import WEEKDAYS, held_words
from kiosk.llm.note_speakers import spoken_text
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.unsupported import supporting_lines
from kiosk.local_time import days_of_month

_DENYING = re.compile(
    r"^(?:not|never|cannot|cancel(?:l)?ed|won['’]t|can['’]t|isn['’]t|aren['’]t|doesn['’]t|don['’]t)$", re.IGNORECASE
)
_UNTIL = re.compile(r"^(?:until|till|til|from)$", re.IGNORECASE)
_TOKEN = re.compile(r"[\w'’]+")
_REACH = 5  # "can't come on Wednesday (25 ...": the denying word, then up to four words before the day


def denied_days(question: str, answer: str, notes: str) -> frozenset[str]:
    """The days of `answer` (days of the month, or weekdays when it names none) that the lines about the "when"
    `question` name only just after a denying word ("can't come on Wednesday (25 November 2026)"), not after
    "until" or "from"."""
    if not asks_when_it_is(question):
        return frozenset()
    named = {str(day) for day, _ in days_of_month(answer)} or set(held_words(answer) & WEEKDAYS)
    if not named:
        return frozenset()
    denied: set[str] = set()
    kept: set[str] = set()
    for line in supporting_lines(question, notes, with_days=False):
        tokens = [token.lower() for token in _TOKEN.findall(spoken_text(line))]
        for index, token in enumerate(tokens):
            before = tokens[max(0, index - _REACH) : index]
            says_not = any(_DENYING.match(word) for word in before) and not any(_UNTIL.match(word) for word in before)
            (denied if says_not else kept).add(token)
    return frozenset(named & denied - kept)


def checked_denied_days(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for an answer giving as when something is a day the notes name only as when it is not; None
    keeps the answer."""
    return UNKNOWN_ANSWER if denied_days(question, answer, notes) else None
