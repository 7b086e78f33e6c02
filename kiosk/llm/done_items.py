"""Items a later note says are done, taken off a list answer to what is still to do.

Told "Office kitchen shopping: oat milk, coffee beans, paper towels and tea bags." and three days later "Got the
tea bags already, the rest of the kitchen list is still to buy.", and asked "What do I still need to buy for the
office kitchen?", the 0.5B model lists all four things. When the question asks what is still to do on an errand
(buy, get, pick up, pack, do, need for; never what to take: a medicine list is not cut short by a dose taken), an
item of a listed answer is dropped when a clause of a note line names it and says it is done ("got", "bought",
"picked up", "already"), and no line said after that one names it as to do again. Only the clause counts: "I need
milk, the eggs I already have" strikes the eggs, not the milk. Nothing is added, and a list whose every item would
go is left as it is.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import content_stems
from kiosk.llm.lists import ITEM_SEPARATOR
from kiosk.llm.note_lines import NoteLine, note_lines

_STILL_TO_DO = re.compile(r"\b(?:still|left|need|needs|have to|has to|got to|must|remaining)\b", re.IGNORECASE)
# errands, not medicine: "Which tablets do I still need to take?" is never shortened by "already took the warfarin"
_ERRAND = re.compile(r"\b(?:buy|get|pick up|collect|order|bring|pack|to do|shopping|needs? for)\b", re.IGNORECASE)
DONE = re.compile(
    r"\b(?:got|bought|brought|picked up|collected|fetched|already|done|crossed off|ticked off)\b", re.IGNORECASE
)
CLAUSE_END = re.compile(r"[,;.!?]|\bbut\b", re.IGNORECASE)


def without_done_items(question: str, answer: str, notes: str) -> str | None:
    """`answer` without the items the notes say are done (see the module's docstring); None when the question
    does not ask what is still to do, the answer lists fewer than two things, or no item (or every item) is done."""
    if not asks_what_is_still_to_do(question):
        return None
    items = [item.strip(" .!") for item in ITEM_SEPARATOR.split(answer) if item.strip(" .!")]
    if len(items) < 2:
        return None
    clauses = [(line, clause) for line in note_lines(notes) for clause in CLAUSE_END.split(line.text)]
    kept = [item for item in items if not _done(content_stems(item), clauses)]
    if len(kept) in (0, len(items)):
        return None
    return ", ".join(kept)


def asks_what_is_still_to_do(question: str) -> bool:
    """True when `question` asks what is still to do on an errand ("What's still on Dad's shopping list?", "What do
    I still need to buy for the office kitchen?"), not what to take."""
    return bool(_STILL_TO_DO.search(question) and _ERRAND.search(question))


def _done(item: frozenset[str], clauses: list[tuple[NoteLine, str]]) -> bool:
    """True when a clause naming `item` says it is done, and no clause naming it as to do was said after it."""
    naming = [(line, bool(DONE.search(clause))) for line, clause in clauses if item and item <= content_stems(clause)]
    done = [line for line, is_done in naming if is_done]
    to_do = [line for line, is_done in naming if not is_done]
    return any(not any(finished.before(listed) for listed in to_do) for finished in done)
