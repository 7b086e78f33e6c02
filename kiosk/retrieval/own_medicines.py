"""A retrieval under the relevance floor keeps the asker's own notes that name the medicines the asker asks about.

A family asks about its medicines by kind or by name and says them in notes by name and dose: "Which tablets am I
on now?" against "The doctor added atorvastatin for the cholesterol, 20 milligrams at night" is 0.244, "The doctor
wants to give me amoxicillin for my chest. Is that safe for me?" against "Remember I'm allergic to penicillin" 0.334,
both under the floor, and the answer was "I don't know" although the asker's own note answers it. Kept are:
- where the question names a medicine, the asker's own retrieved notes that name it or its family ("amoxicillin"
  and "penicillin", kiosk.llm.families);
- where it asks in the first person ("I", "my", "me") about medicines by kind ("tablets", "pills", "medicines"),
  the asker's own retrieved notes that name a medicine (a dose or a name, kiosk.llm.medicine_names).
A note that says what its medicine is for ("for the chest infection") is left out when the question asks for
something else ("Which tablets do I take for my blood pressure and my sugar?"). Only the asker's own notes (their
personal notes and what they said to a group) count, and only those are given to the model: a question about "my
tablets" must not be answered from another person's prescription, nor from "the wifi password for the tablet" the
retrieval found beside them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kiosk.llm.answer_form import ASKS_OF_ME, TIME_WORDS, content_stems, word_set
from kiosk.llm.families import families_of
from kiosk.llm.medicine_names import MEDICINE_KIND, medicine_words, names_a_medicine, word_stems
from kiosk.memory import Note
from kiosk.stems import porter_stem

_FOR_PHRASE = re.compile(r"\bfor\s+([^,.;!?]+)", re.IGNORECASE)
_DURATION_STEMS = frozenset(
    porter_stem(word) for word in TIME_WORDS | word_set("hour hours days weeks months years while ever life now")
)


def own_medicine_notes(question: str, notes: Sequence[Note], asker: int | None) -> list[int]:
    """The positions in `notes` of the asker's own notes that name a medicine `question` asks about (see the
    module's account); [] when it asks about none or the asker said none of them."""
    if asker is None:
        return []
    own = [index for index, note in enumerate(notes) if note.speaker_id == asker]  # their notes and group words
    named = medicine_words(question)
    if named:
        asked = {porter_stem(word) for word in named} | families_of(named)
        return [index for index in own if asked & word_stems(notes[index].content)]
    if MEDICINE_KIND.search(question) and ASKS_OF_ME.search(question):
        asked_for = _purposes(question)
        return [
            index
            for index in own
            if names_a_medicine(notes[index].content) and _for_what_is_asked(_purposes(notes[index].content), asked_for)
        ]
    return []


def _purposes(text: str) -> list[frozenset[str]]:
    """The content stems of each "for ..." phrase of `text` that says what a medicine is for, not for how long:
    "amoxicillin for the chest infection, for five days" -> [{chest, infect}]."""
    phrases = (content_stems(match) for match in _FOR_PHRASE.findall(text))
    return [stems for stems in phrases if stems and not stems & _DURATION_STEMS]


def _for_what_is_asked(purposes: list[frozenset[str]], asked_for: list[frozenset[str]]) -> bool:
    """False only when both the note and the question say what a medicine is for and they share no word: "Which
    tablets do I take for my blood pressure?" is not about "amoxicillin for the chest infection"."""
    if not purposes or not asked_for:
        return True
    asked = frozenset().union(*asked_for)
    return any(stems & asked for stems in purposes)
