"""Which days of the week something happens on, as the notes say it (issue #36).

Asked "Which days do I cover the desk at lunchtime?", the 0.5B model copied the whole rota ("Lunch cover: Aoife will
do the desk Mondays and Wednesdays from one to two, Ciaran does Tuesdays and Thursdays, and we take turns on
Fridays"); asked "Which days is soccer practice now?", it gave one of the two days of "Soccer practice moved to
Tuesdays and Thursdays at 5". The notes say the days in one clause.

A question asking which day(s), nights or mornings something is ("Which days does Priya come instead of Grace?",
"Which nights does the general waste go out?", "What day is Kabir's cricket training now?") is answered from a
clause of the notes (a sentence's part between commas, semicolons or a colon, the rest of a list of days kept with
it: "I come Monday, Wednesday and Friday") that names weekdays, other than one it moved away from ("moved from
Wednesday to Thursday" names Thursday), and is about it:
- where the question names someone (or asks in the first person: the asker), the clause names that first person
  named (or is their own, speaking as "I" or naming no one), and its line holds two of the question's other telling
  words (all, when it has fewer): "Ciaran does Tuesdays and Thursdays" in the lunch-cover line for Ciaran's
  question;
- otherwise the clause holds two of the telling words (all, when fewer): "general waste on Thursday and Sunday
  nights".
The last such clause of the notes (they are oldest first) gives the answer, its weekdays in its order ("Tuesday,
Thursday"), unless it negates or cancels anything ("no practice on Thursday"), is about one day only (a weekday
with its date, "this Thursday", "next Tuesday"), or a later line holding a telling word of the question says
something changed ("Actually judo moved to Thursdays" after "Sami has judo on Wednesdays", asked about Sami): then
nothing is said. It replaces an answer naming other weekdays or none.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import ASKS_OF_ME, asked_sentence, content_stems, telling_words
from kiosk.llm.compared_words import WEEKDAYS, bare_token
from kiosk.llm.note_lines import note_lines
from kiosk.llm.note_speakers import names_in, note_people, speaker_of_line, spoken_text
from kiosk.llm.prompts import asker_of
from kiosk.llm.question_lines import SENTENCE_BREAK
from kiosk.stems import porter_stem

_ASKS_WHICH_DAYS = re.compile(
    r"^\W*(?:which|what)\s+(?:days|nights|evenings|mornings|afternoons)\s+(?:of\s+the\s+week\s+)?"
    r"(?:do|does|did|is|are|am|will|should|can|has|have)\b"
    # one day, as it is now: "What day is Kabir's cricket training now?", not "What day did Tim get in?" (a date)
    r"|^\W*(?:which|what)\s+(?:day|night|evening|morning|afternoon)\s+(?:of\s+the\s+week\s+)?"
    r"(?:do|does|is|are|am|will|should|can)\b",
    re.IGNORECASE,
)
# A weekday something moved away from is no longer its day: "Cricket training moved from Wednesday to Thursday".
_MOVED_FROM = re.compile(
    r"\b(?:moved?|moving|changed?|switched|swapped)\b[^.]*?\bfrom\s+(?:the\s+)?"
    r"((?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b",
    re.IGNORECASE,
)
_PIECES = re.compile(r"\s*[,;:]\s*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_SPEAKS_AS_I = re.compile(r"\b(?:i|i'm|i’m|i'll|i’ll|i've|i’ve)\b", re.IGNORECASE)
_OTHER_PERSON = re.compile(r"\b(?:we|us|our|you|your|he|him|his|she|her|they|them|their)\b", re.IGNORECASE)
_NEGATES = re.compile(r"\b(?:not|no|never|cancel\w*|off|skip\w*|without)\b|\b\w+n['’]t\b", re.IGNORECASE)
_ONE_DAY = re.compile(
    r"\(\d{1,2} [A-Z][a-z]+ \d{4}\)|\b(?:this|next|last|tomorrow|tonight|today)\b|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\s+(?:the\s+)?\d",
    re.IGNORECASE,
)
# superseded.CHANGE without "now" or "up from": "Soccer is now on Tuesdays" or "pick Kenji up from soccer" said
# after the rota changes nothing of it.
_CHANGED = re.compile(
    r"\b(?:change\s+of\s+plan|actually|moved?|moving|changed?|instead|no\s+longer|any\s?more|cancel(?:l)?ed|"
    r"rearranged|postponed|swapped|switched)\b",
    re.IGNORECASE,
)
# Words of such a question that tell nothing of what it is about: "Which days does Priya come instead of Grace?"
_NOT_TELLING = frozenset(
    porter_stem(word) for word in ("day", "days", "night", "nights", "week", "weekday", "instead", "usually", "now")
)


def notes_weekdays(question: str, answer: str, notes: str) -> str | None:
    """The weekdays the notes say `question`'s thing is on ("Tuesday, Thursday"), where `answer` names others or
    none (see the module's docstring); None otherwise."""
    asked = asked_sentence(question)
    if not _ASKS_WHICH_DAYS.search(asked):
        return None
    person = _first_person_named(asked, asker_of(notes))
    telling = telling_words(asked, min_letters=3) - _NOT_TELLING - ({porter_stem(person)} if person else set())
    wanted = min(2, len(telling))
    found: list[str] | None = None
    changed_since = False
    lines = note_lines(notes)
    people = note_people(line.text for line in lines) | ({asker.lower()} if (asker := asker_of(notes)) else set())
    for line in lines:
        said = spoken_text(line.text)
        speaker = (speaker_of_line(line.text) or "").lower()
        changed_since = changed_since or bool(telling & content_stems(said) and _CHANGED.search(said))
        if person and len(telling & content_stems(said)) < wanted:
            continue
        for sentence in SENTENCE_BREAK.split(said):
            for clause in _clauses(sentence):
                moved_from = {bare_token(day) for day in _MOVED_FROM.findall(clause)}
                days = [day for day in _weekdays(clause) if day not in moved_from]
                if not days:
                    continue
                if person:
                    named = {word.lower() for word in _WORD.findall(clause)}
                    of_speaker = person == speaker and _of_the_speaker(clause, people | names_in(sentence))
                    if person not in named and not of_speaker:
                        continue
                elif not telling or len(telling & content_stems(clause)) < wanted:
                    continue
                found = None if _NEGATES.search(clause) or _ONE_DAY.search(clause) else days
                changed_since = False
    if not found or changed_since or _weekdays(answer) == found:
        return None
    return ", ".join(day.capitalize() for day in found)


def _of_the_speaker(clause: str, people: frozenset[str]) -> bool:
    """True when `clause` is about its speaker: it speaks as "I", or names none of `people` (the notes' people
    and the names its sentence gives), not even as "we" or "she" ("Cricket training moved to Thursday" in Kabir's
    own note)."""
    if _SPEAKS_AS_I.search(clause):
        return True
    return not ({bare_token(word) for word in _WORD.findall(clause)} & people or _OTHER_PERSON.search(clause))


def _first_person_named(asked: str, asker: str | None) -> str | None:
    """The person `asked` is about, lower-cased: the first name it gives, or the asker when it asks in the first
    person; None when it names no one."""
    names = [
        match.group()
        for match in _WORD.finditer(asked)
        if match.start() > 0 and match.group()[0].isupper() and len(match.group()) > 1 and not _bare_day(match.group())
    ]
    if names:
        return bare_token(names[0])
    return asker.lower() if asker and ASKS_OF_ME.search(asked) else None


def _clauses(sentence: str) -> list[str]:
    """`sentence`'s parts between commas, semicolons or a colon, a part going on with a list of days kept with the
    one before it ("I come Monday", "Wednesday and Friday" -> "I come Monday, Wednesday and Friday")."""
    clauses: list[str] = []
    for piece in _PIECES.split(sentence):
        words = _WORD.findall(piece)
        if clauses and words and _bare_day(words[0]) and _weekdays(clauses[-1]):
            clauses[-1] = f"{clauses[-1]}, {piece}"
        elif piece:
            clauses.append(piece)
    return clauses


def _weekdays(text: str) -> list[str]:
    """The weekdays `text` names, in its order, each once ("Tuesdays and Thursdays" -> tuesday, thursday)."""
    days: list[str] = []
    for word in _WORD.findall(text):
        day = _bare_day(word)
        if day and day not in days:
            days.append(day)
    return days


def _bare_day(word: str) -> str | None:
    bare = bare_token(word)
    return bare if bare in WEEKDAYS else None
