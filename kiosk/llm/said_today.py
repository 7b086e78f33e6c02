"""A yes or no to whether something was done today, with nothing said about it today, becomes "I don't know"
(issue #36).

"Has Maman had her metformin this morning?", asked at half past seven with no note of that morning: the 0.5B model
answered "No" from the list of her tablets. Either answer is a guess, and a guess can double a dose or miss one.
What was done today is known only from what was said today: a note line filed under the day the question is asked
that holds a word of what it asks about ("Gave Maman her Lantus, 12 units, at nine" for "Has she had her Lantus
tonight?"). Only questions asking whether something was done ("Has ...", "Did ...") are judged, not how things
are ("Is there school today?", which a note from the week before may answer). The day is the terminal's local
day; a replay without a terminal clock (LoCoMo) passes none, and nothing is judged.
"""

from __future__ import annotations

import re
from datetime import date

from kiosk.llm.answer_form import (
    asked_sentence,
    asks_yes_or_no,
    content_stems,
    says_unknown,
    subject_stems,
    word_set,
)
from kiosk.llm.compared_words import held_words
from kiosk.llm.note_lines import note_lines
from kiosk.llm.note_speakers import names_given
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.stems import porter_stem

# Words of a question that say when or what was done in general, not what: "this morning", "got", "had".
_NO_THING = frozenset(
    porter_stem(word)
    for word in word_set("today tonight this morning afternoon evening go get got have had do did make take taken")
)
_TODAY = re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.IGNORECASE)
# The openers of a question asking whether something was done.
_WAS_DONE = word_set("has have had did hasn't haven't didn't")


def asks_whether_done_today(question: str) -> bool:
    """True for a yes/no question asking whether something was done today ("Has anyone walked Biscuit this
    morning?")."""
    asked = asked_sentence(question)
    words = asked.lower().replace("’", "'").split()
    return asks_yes_or_no(question) and bool(words) and words[0] in _WAS_DONE and bool(_TODAY.search(asked))


def checked_said_today(question: str, answer: str, notes: str, asked_on: date | None) -> str | None:
    """ "I don't know" for an answer to whether something was done today when no line said today is about it;
    None keeps the answer."""
    if asked_on is None or says_unknown(answer) or not asks_whether_done_today(question):
        return None
    asked = asked_sentence(question)
    lines = note_lines(notes)
    said_today = [line.text for line in lines if line.day == asked_on]
    thing = subject_stems(asked) - _NO_THING
    if thing:  # "her metformin": a line of today naming Maman for her Lantus says nothing of it
        found = any(thing & content_stems(line) for line in said_today)
    else:  # "Has Maman had her Lantus tonight?": what it asks about is named ("Lantus", not a speaker)
        names = names_given(asked, [line.text for line in lines])
        found = any(names & held_words(line) for line in said_today)
    return None if found else UNKNOWN_ANSWER
