"""A yes/no or either/or answer the notes about the question contradict becomes the choice they make, or "I don't
know" where they make none (issue #36).

A choosing answer is one word, and a wrong one is harmful: "Do I have swimming on Wednesdays?" -> "Yes" when the
swimming note says Tuesdays and Thursdays; "Do I take the prednisolone with breakfast or at night?" -> "At night"
(the inhaler's "morning and night") when the prednisolone note says "with breakfast". The lines judged are the note
lines about what is asked: a line holding a word of the question's subject (kiosk.llm.answer_form.subject_stems)
other than the options or days it names, read once per answer (kiosk.llm.question_lines). Only a plain
contradiction withdraws an answer; what counts as one is told by kiosk.llm.either_or and kiosk.llm.yes_no.

Where the notes contradict a choice they make one themselves (notes_choice, the answer-contradicted step): the other
option in the question's words, or "No" to a "yes" they deny or whose day they do not name; a "no" they contradict
is withdrawn, never turned into "yes". A day or number a line about the question says changed from ("put her Lantus
up from 10 to 12 units") becomes what it changed to.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import asks_yes_or_no, offers_a_choice, says_unknown
from kiosk.llm.compared_words import held_words
from kiosk.llm.either_or import either_or_answer
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.question_lines import NoteLines, kind_of, lines_naming
from kiosk.llm.superseded import FROM_TO
from kiosk.llm.time_anchors import ANCHOR
from kiosk.llm.yes_no import denied_outright, yes_no_answer

_NO = "No"


def _notes_answer(question: str, answer: str, notes: NoteLines) -> str | None:
    """What the notes about `question` answer where they contradict the choice `answer` makes; NO_CHOICE when they
    contradict it without one answer; None when they do not contradict it."""
    if says_unknown(answer):
        return None
    if offers_a_choice(question):
        return either_or_answer(question, answer, notes)
    if asks_yes_or_no(question):
        return yes_no_answer(question, answer, notes)
    return None


def contradicted(question: str, answer: str, notes: str) -> bool:
    """True when the notes about `question` contradict the choice `answer` makes (see the module's docstring)."""
    return _notes_answer(question, answer, NoteLines.of(notes)) is not None


def checked_choice(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for a choice the notes about the question contradict; None keeps the answer."""
    return UNKNOWN_ANSWER if contradicted(question, answer, notes) else None


def _changed_value(question: str, answer: str, notes: NoteLines) -> str | None:
    """`answer` with a day or number that a line naming a word of the question's subject or a name it gives says
    changed from, as that line says it changed to: "10 units" or "10" -> "12 units" or "12" after "Dr Nguyen put
    her Lantus up from 10 to 12 units", never across kinds or units ("12 November" stays). None when no line says
    so."""
    if says_unknown(answer):
        return None
    asked = held_words(question)
    for line in reversed(lines_naming(question, notes)):
        for change in FROM_TO.finditer(ANCHOR.sub(" ", line)):
            old, new, unit = change.group("old").lower(), change.group("new").rstrip(".,"), change.group("unit")
            if old in asked or not kind_of(old) or kind_of(old) != kind_of(new.lower()):
                continue
            said = re.search(rf"\b{re.escape(old)}\b(?:\s+(?P<after>[A-Za-z]+))?", answer, re.IGNORECASE)
            if said is None or (said.group("after") and (unit or "").lower() != said.group("after").lower()):
                continue
            return answer[: said.start()] + new + answer[said.start() + len(old) :]
    return None


def notes_choice(question: str, answer: str, notes: str) -> str | None:
    """The choice the notes about `question` make where they contradict the one `answer` makes ("In the morning"
    for "In the evening" when the ramipril's line says morning; "No" for a "yes" to amoxicillin for someone
    allergic to penicillin), or the value a line says the answer's changed to ("12 units" for "10 units" after "up
    from 10 to 12 units"), when they make one; for "I don't know" to a yes/no question, "No" when a line about its
    own thing refuses what it asks (kiosk.llm.yes_no.denied_outright); None otherwise."""
    lines = NoteLines.of(notes)
    if says_unknown(answer):
        asks_yes_no = asks_yes_or_no(question) and not offers_a_choice(question)
        return _NO if asks_yes_no and denied_outright(question, lines) else None
    given = _notes_answer(question, answer, lines)
    return given if given else _changed_value(question, answer, lines)
