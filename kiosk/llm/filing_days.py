"""An event's day answered with the day its note was filed under is answered again without the filing days
(issue #36).

The answering prompt files the notes under the day each was said ("[6 October 2026]"): that is how "When did ..."
questions get their answer, and the worked examples teach it (kiosk.llm.prompts). Asked when something *is*, the
0.5B model copies the filing day too: "When's my orthodontist appointment?" -> "6 October 2026", from the line
"Remember I've got the orthodontist next Tuesday (13 October 2026) at 3:45" filed under that day. Relative days in
a line already carry their date in brackets (kiosk.llm.time_anchors), so the filing days are not needed to answer
such a question.

When the question asks when something is or will be (not when it was), and the answer names a day of the month
that is a filing day of the notes and that no note line about the question (kiosk.llm.unsupported.lines_about)
names in its own words, the model is asked again with the day headers left out, and its new answer is shown. A line
about something else naming that day does not make it the answer: "When is my mum's birthday?" -> "14 October
2026", the day another birthday was mentioned and also the day of a fire drill.
"""

from __future__ import annotations

from collections.abc import Callable

from kiosk.llm.answer_form import asks_when_it_is, says_unknown
from kiosk.llm.note_lines import DAY_HEADER, filing_day, note_lines
from kiosk.llm.unsupported import lines_about
from kiosk.local_time import days_of_month


def days_named(text: str) -> frozenset[tuple[int, str]]:
    """The (day, month) pairs `text` names: "13 October 2026", "the 3rd of May", "October 13"."""
    return frozenset((day, month) for day, month in days_of_month(text) if month)


def copies_a_filing_day(question: str, answer: str, notes: str) -> bool:
    """True when `answer` gives a filing day of `notes`, that no note line about the question names, to a question
    about when something is (see the module's docstring)."""
    if says_unknown(answer) or not asks_when_it_is(question):
        return False
    named = days_named(answer)
    if not named:
        return False
    filed = {(line.day.day, f"{line.day:%B}".lower()) for line in note_lines(notes) if line.day is not None}
    stated = frozenset().union(*(days_named(line) for line in lines_about(question, notes, with_days=False)))
    return bool(named & filed) and not named & stated


def misleading_lines(question: str, answer: str, notes: str) -> Callable[[str], bool] | None:
    """What to leave out of the notes to ask again (kiosk.llm.note_lines.asked_again_without): the day headers when
    `answer` copies a filing day (copies_a_filing_day), otherwise None."""
    return _is_day_header if copies_a_filing_day(question, answer, notes) else None


def _is_day_header(line: str) -> bool:
    header = DAY_HEADER.match(line)
    return header is not None and filing_day(header.group("day")) is not None
