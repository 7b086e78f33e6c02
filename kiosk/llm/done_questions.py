"""Yes/no questions asking whether something has been done, read against what the terminal was told.

"Is Stan's flu shot booked?", "Has Ania paid our gas bill?", "Is the boiler fixed?": the terminal knows only what
it was told, so the 0.5B model's "no" to notes silent on it, or its "yes" to notes saying it is still to come, is a
guess (kiosk.llm.yes_no withdraws it):
- a "no" stands only when a line about the question's own thing says it is still to do ("due on the 6th", "can you
  pay it?", "is coming on Monday to fix it"), a clause about it says it is not done ("Nobody has rung the
  plumber"), or the person asked about did not do it ("Has Sofia paid the electricity bill?": "Luca: Paid the
  electricity bill tonight"), and no line about it filed later says it was done ("The TV licence is due on the
  20th", then "Paid the TV licence tonight");
- a "yes" is a guess when those lines say it is still to do and none that it was done ("The boiler man is coming on
  Tuesday to fix the boiler");
- either is a guess when a telling word of what is asked is in no line at all ("Is Marco's driving test booked?"
  over notes of driving practice), but for a question opening "Did": told as a story ("Did Jon and Gina both
  participate in dance competitions?"), its verb is seldom the notes' own word ("competed"), and counting it
  withdrew a right LoCoMo "Yes".
"""

from __future__ import annotations

import re
from datetime import date

from kiosk.llm.answer_form import content_stems, telling_words, word_set
from kiosk.llm.compared_words import bare_token
from kiosk.llm.days_named import filed_on
from kiosk.llm.done_items import DONE
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.note_speakers import names_in, speaker_of_line, spoken_text
from kiosk.llm.question_lines import NoteLines, clauses_about, kind_of, lines_of_its_own_thing, words_of
from kiosk.stems import porter_stem

# A question whether something has been done: "Has Ania paid our gas bill?", "Did Stan have another fall this
# week?", "Is Stan's flu shot booked?", "... picked up yet?"; not "Have I got to ...?", which asks a duty.
_ASKS_IF_DONE = re.compile(
    r"^\W*(?:(?:has|have|had|did)\b(?!.*\b(?:got|have|has)\s+to\b)|(?:is|are|was|were)\b.*\b(?:\w+ed|paid|done)"
    r"(?:\s+(?:yet|already))?\W*$)|\byet\W*$",
    re.IGNORECASE,
)
# The words of such a question that say done, not what: "booked", "paid", "fixed"; nor do "another", "anyone",
# "yet", "during" name a thing.
_DONE_WORDS = frozenset(
    porter_stem(word)
    for word in word_set(
        "booked paid done fixed sorted made sent got had another anyone anybody someone yet ever into during before "
        "after since until"
    )
)
# What says a thing was done: "Bought the glucose tablets", "Paid the water bill", "Walked Biscuit before school".
_SAID_DONE = re.compile(rf"{DONE.pattern}|\b(?:paid|fixed|sorted|booked|repaired|finished|\w+ed)\b", re.IGNORECASE)
_STORY = re.compile(r"^\W*did\b", re.IGNORECASE)
# The person a question asks whether they did it: "Has Sofia paid ...?", "Did Marc ...?".
_DOER = re.compile(r"^\W*(?:has|have|had|did)\s+(?P<name>[\w'’-]+)", re.IGNORECASE)
# What says, in a clause about it, that a thing is not done: "not booked", "nobody has rung the plumber".
_NOT_DONE = re.compile(r"\b(?:not|never|no|nobody|nothing|forgot|missed|skip\w*)\b|\b\w+n['’]t\b", re.IGNORECASE)
# What says, anywhere in a line about it, that it is still to do: "due on the 6th", "somebody pick it up before
# Saturday", "Luca, can you pay it?", "the maintenance man is coming on Monday to fix it".
_TO_DO = re.compile(
    r"\b(?:yet|still|need\w*|due|waiting|until|before\s+(?:\w+day|the\s+\d+|\d+|tomorrow|next)|will|going|"
    r"com(?:e|es|ing)|tomorrow|next|later|soon|please|can\s+you|could\s+you|out\s+of|run\s+out|ran\s+out)\b"
    r"|\b\w+['’]ll\b",
    re.IGNORECASE,
)


def asks_if_done(asked: str) -> bool:
    """True when the `asked` sentence asks whether something has been done (see the module's docstring)."""
    return bool(_ASKS_IF_DONE.search(asked))


def says_still_to_do(text: str) -> bool:
    """True when `text` says something is still to do ("due on the 6th", "is coming on Monday to fix it")."""
    return bool(_TO_DO.search(text))


def no_is_a_guess(question: str, asked: str, notes: NoteLines) -> bool:
    """True when the `question` (its asking sentence `asked`) asks whether something has been done and a "no" to it
    is a guess: no line about its own thing says it is still to do, no clause about it that it is not done, and no
    line tells of another than the person asked doing it; or a word of what it asks is in no line."""
    if not asks_if_done(asked):
        return False
    if names_what_no_line_holds(asked, notes):
        return True
    own = lines_of_its_own_thing(question, notes)
    if _done_since(own, notes):
        return True
    said = [spoken_text(line) for line in own]
    if any(says_still_to_do(line) for line in said) or _done_by_another(asked, own):
        return False
    return not any(_NOT_DONE.search(clause) for clause in clauses_about(question, said, frozenset()))


def yes_is_a_guess(question: str, asked: str, notes: NoteLines) -> bool:
    """True when the `question` (its asking sentence `asked`) asks whether something has been done and a "yes" to it
    is a guess: a word of what it asks is in no line, or the lines about its own thing say it is still to do and
    none that it was done."""
    if not asks_if_done(asked):
        return False
    if names_what_no_line_holds(asked, notes):
        return True
    said = [spoken_text(line) for line in lines_of_its_own_thing(question, notes)]
    return any(says_still_to_do(line) for line in said) and not any(_SAID_DONE.search(line) for line in said)


def names_what_no_line_holds(asked: str, notes: NoteLines, ignored: frozenset[str] = frozenset()) -> bool:
    """True when a telling word of the `asked` sentence, not one saying it was done, a weekday, month or number, nor
    one of `ignored` (stems), is in no note line; never for a question opening "Did" (see the module's docstring)."""
    if _STORY.match(asked):
        return False
    held = frozenset().union(*(content_stems(spoken_text(line)) for line in notes.lines))
    return any(not kind_of(stem) for stem in telling_words(asked) - _DONE_WORDS - ignored - held)


def _done_since(own: list[str], notes: NoteLines) -> bool:
    """True when one of the lines about the question's own thing (`own`) says it was done, filed on a later day than
    every one of them saying it is still to do ("The TV licence is due on the 20th" on the 7th, "Paid the TV licence
    tonight" on the 18th)."""
    to_do: list[date] = []
    done: list[date] = []
    for day, line in dated_note_lines(notes.text):
        filed = filed_on(day)
        if line not in own or filed is None:
            continue
        said = spoken_text(line)
        if says_still_to_do(said):
            to_do.append(filed)
        elif _SAID_DONE.search(said):
            done.append(filed)
    return bool(done and to_do) and max(done) > max(to_do)


def _done_by_another(asked: str, lines: list[str]) -> bool:
    """True when the question asks whether a person it names did it ("Has Sofia paid the electricity bill?") and no
    line about it is that person's or names them: its lines tell of someone else doing it ("Luca: Paid the
    electricity bill tonight"), so the "no" is the notes' own."""
    doer = _DOER.match(asked)
    name = bare_token(doer.group("name")) if doer else None
    if name is None or name not in names_in(asked):
        return False
    return not any(name in words_of(line) or (speaker_of_line(line) or "").lower() == name for line in lines)
