"""Whether the notes say someone else does what a yes/no question asks a person does (issue #36).

Asked "Is Sipho taking Gogo to her eye appointment today?", the 0.5B model said "Yes" over the notes "Sipho, can
you take her?", "Sipho will be sleeping after the night shift that day. Ask Mpho." and "Mpho will take Gogo to
St John's on the 12th". A yes/no question asking whether a person it names does something ("Is Sipho taking ...",
"Will Raj collect ...") is the who-question of the same words ("Who is taking Gogo to her eye appointment?"); when
the notes name one person doing that (kiosk.llm.doers.doer_named) and it is someone else, "yes" is against them;
so it is when a line naming the weekday it asks about says that person cannot ("Is Wei covering Hannah's Wednesday
afternoon?": "Wei: I can't on Wednesday, I'm at the Benoit install"), or that someone covers for them ("Is Omar on
reception on Thursday morning?": "Wei will cover Thursday morning for Omar").
Asked in the first person ("Am I picking Théo up from hockey tomorrow?"), the sentences about it naming one other
person doing it ("Marc will pick Théo up from hockey on Wednesdays") make the answer "No".
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import asked_sentence, content_stems, subject_stems
from kiosk.llm.compared_words import WEEKDAYS, bare_token, held_words
from kiosk.llm.doers import YOU, doer_named, says_they_cannot
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.note_speakers import note_people, said_in, spoken_text
from kiosk.llm.prompts import asker_of
from kiosk.llm.question_lines import SENTENCE_BREAK
from kiosk.llm.unsupported import supporting_lines

_ASKS_IF_I_DO = re.compile(r"^\W*(?:am\s+i|will\s+i|shall\s+i|do\s+i\s+have\s+to|have\s+i\s+got\s+to)\b", re.IGNORECASE)
# Someone standing in for another: "cover Thursday morning for Omar", "covering Jack's Saturday shift".
_COVERS_FOR = re.compile(
    r"\b(?:cover\w*|fill\w*\s+in|stand\w*\s+in|swap\w*|tak\w*\s+over)\b[^.;?!]*?\b(?:for|instead\s+of)\s+"
    r"(?P<name>[A-Z][\w'’-]*)|\bcover\w*\s+(?P<owner>[A-Z][\w-]*)['’]s\b"
)
_ASKS_IF_THEY_DO = re.compile(r"^\W*(?P<verb>(?i:is|are|will|can))\s+(?P<name>(?!I\b)[A-Z][\w'’-]*)\s+(?P<rest>\w.*)$")


def another_does_it(question: str, notes: str) -> bool:
    """True when `question` asks whether a person it names does something and the notes say one other person does
    it, or that this person cannot on the weekday it asks about (see the module's docstring)."""
    asked = _ASKS_IF_THEY_DO.match(asked_sentence(question).strip())
    if asked is None:
        return False
    name = asked.group("name")
    weekdays = held_words(question) & WEEKDAYS
    on_the_day = [line for _, line in dated_note_lines(notes) if weekdays & held_words(spoken_text(line))]
    if weekdays and (says_they_cannot(name, on_the_day) or _covered(name, on_the_day)):
        return True
    doer = doer_named(f"Who {asked.group('verb').lower()} {asked.group('rest')}", notes)
    if doer is None:
        return False
    if doer == YOU:
        doer = asker_of(notes) or ""
    return bare_token(doer) != bare_token(name)


def someone_else_does_it(question: str, notes: str) -> bool:
    """True when the asker asks whether they are the one to do something ("Am I picking Théo up from hockey
    tomorrow?") and the sentences of the lines about it say one other person does it ("Marc will pick Théo up from
    hockey on Wednesdays"), not the asker."""
    asker = asker_of(notes)
    if asker is None or not _ASKS_IF_I_DO.match(asked_sentence(question)):
        return False
    subject = subject_stems(asked_sentence(question))
    lines = supporting_lines(question, notes, with_days=False, words=2)
    sentences = [part for line in lines for part in SENTENCE_BREAK.split(line) if subject & content_stems(part)]
    said = said_in(sentences)
    doers = note_people(line for _, line in dated_note_lines(notes)) & said - held_words(question)
    return len(doers) == 1 and asker.lower() not in said


def _covered(name: str, lines: list[str]) -> bool:
    """True when a line of `lines` says someone covers for `name` or takes their turn ("Wei will cover Thursday
    morning for Omar", "Mia is covering Jack's Saturday shift")."""
    person = bare_token(name)
    return any(
        bare_token(match.group("name") or match.group("owner")) == person
        for line in lines
        for match in _COVERS_FOR.finditer(line)
    )
