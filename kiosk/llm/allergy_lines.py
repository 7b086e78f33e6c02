"""How a note line speaks of an allergy: the words that name one, the words that say a thing is fine, and a clause
saying the thing a question asks about is fine after naming it (issue #36; used by kiosk.llm.yes_no)."""

from __future__ import annotations

import re

from kiosk.llm.answer_form import subject_stems, word_set
from kiosk.llm.note_speakers import names_given
from kiosk.llm.question_lines import CLAUSE_OR_COLON_BREAK, DENYING, words_of
from kiosk.stems import porter_stem

ALLERGY = re.compile(r"\b(?:allerg\w*|epipen|anaphyla\w*|intoleran\w*|coeliac|celiac)\b", re.IGNORECASE)
# A word of what is asked right after one of these does no harm: "Théo is fine with peanuts", asked "Is Théo
# allergic to peanuts?".
FINE = word_set("fine ok okay safe")
_NOT = re.compile(r"\b\w+n['’]t\b", re.IGNORECASE)
_REACH = 4  # "Peanuts and almonds are fine"


def fine_after(question: str, lines: tuple[str, ...]) -> bool:
    """True when a clause of a line naming the person the allergy `question` names says the thing asked is fine
    after naming it, with no denying or allergy word in the clause: "Kabir is allergic to cashews. Peanuts and
    almonds are fine." for "Is Kabir allergic to peanuts?" ("allergic to peanuts, the rest is fine" is not)."""
    subject = subject_stems(question)
    names = names_given(question, lines)
    for line in lines:
        if names and not names.intersection(words_of(line)):
            continue
        for clause in CLAUSE_OR_COLON_BREAK.split(line):
            words = words_of(clause)
            if DENYING.intersection(words) or _NOT.search(clause) or ALLERGY.search(clause):
                continue
            named = [index for index, word in enumerate(words) if porter_stem(word) in subject]
            if named and FINE.intersection(words[named[0] + 1 : named[0] + 1 + _REACH]):
                return True
    return False
