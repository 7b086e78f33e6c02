"""An answer the notes do not give becomes "I don't know".

Asked something its notes do not answer, the 0.5B model rarely says so: it copies a fact from a note about
something else ("How much did the new dishwasher cost?" -> "20 kronor", the pocket money; "What time does
Farmor's party start?" -> "10:00", a dentist's time). On a kitchen terminal that is a made-up time or amount.
When some note lines are about what the question asks (kiosk.llm.answer_form.says_what_is_asked: a line holding a
word of the question's subject), an answer is kept only when what it adds to the question (its content words other
than the question's) is held by those lines, with the dates they are filed under; otherwise it is shown as
"I don't know". When no line names what is asked, the notes may still answer it in other words ("What is my dog
called?", "I adopted a beagle puppy named Biscuit"): the answer is left to the model, as is a yes/no or
either/or answer, which chooses rather than states.
"""

from __future__ import annotations

from kiosk.llm.answer_form import (
    asks_yes_or_no,
    content_stems,
    offers_a_choice,
    says_unknown,
    says_what_is_asked,
)
from kiosk.llm.note_lines import DAY_HEADER, filing_day
from kiosk.llm.prompts import UNKNOWN_ANSWER, inside_notes


def dated_note_lines(notes: str) -> list[tuple[str, str]]:
    """(the day a line is filed under, the line) for every note line inside the <notes> blocks of `notes`, the day
    with its weekday ("Saturday 12 September 2026") as compact_notes writes it without one."""
    day = ""
    lines = []
    for line in inside_notes(notes).splitlines():
        line = line.strip()
        header = DAY_HEADER.match(line)
        if header:
            day = _with_weekday(header.group("day"))
        elif line:
            lines.append((day, line))
    return lines


def _with_weekday(day: str) -> str:
    parsed = filing_day(day)
    return f"{parsed:%A} {day}" if parsed is not None else day


def grounded(question: str, answer: str, notes: str) -> bool:
    """True when the notes about what `question` asks hold what `answer` adds to it (see the module's docstring)."""
    if says_unknown(answer) or asks_yes_or_no(question) or offers_a_choice(question):
        return True
    added = content_stems(answer) - content_stems(question)
    if not added:
        return True
    about: list[set[str]] = []
    for day, line in dated_note_lines(notes):
        if says_what_is_asked(question, line, words=1):
            about.append(set(content_stems(line) | content_stems(day)))
    if not about:
        return True  # no note names what is asked (a paraphrase: "dog" for "puppy"): nothing to judge by
    return added <= set().union(*about)


def grounded_answer(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for an answer `notes` do not give (grounded); None keeps the answer."""
    return None if grounded(question, answer, notes) else UNKNOWN_ANSWER
