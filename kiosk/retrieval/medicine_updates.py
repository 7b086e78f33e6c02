"""Later notes about a medicine the chosen notes name: the change of dose or the stop the question's words miss.

Asked "Which tablets does Dad take in the morning now?", retrieval chose "Dad's morning tablets: furosemide 40 mg,
bisoprolol 2.5 mg, apixaban 2.5 mg, and metformin 500 mg" but not the GP visit of a month later, "She's cut the
furosemide to 20 mg from Monday because his kidney blood test was a bit off": it shares no word with the question,
and the answer gave the old dose. On the household set's development and test questions, the harmful yes/no
answers were mostly of this kind: a medicine still taken after a note that stopped it was not retrieved.

So, for a question about medicine (naming one, a dose, or medicines by kind: "tablets"), for each medicine a
chosen note names, the notes said after the earliest chosen note naming it that name it too
join the chosen notes: found by a retrieval for the medicine's name through the same gate, scopes and exclusions
as the question's own (`find`), at most MAX_UPDATES of them, the newest first. The prompt keeps its time order.
"""

from __future__ import annotations

from collections.abc import Callable

from kiosk.llm.medicine_names import asks_about_medicine, medicine_words, word_stems
from kiosk.retrieval.later_notes import MAX_UPDATES, with_later_notes
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.stems import porter_stem

__all__ = ["MAX_UPDATES", "with_medicine_updates"]


def with_medicine_updates(retrieval: Retrieval, question: str, find: Callable[[str], Retrieval]) -> Retrieval:
    """`retrieval` with the later notes naming a medicine its notes name, for a `question` about medicine (see the
    module's docstring)."""
    if not retrieval.notes or not asks_about_medicine(question):
        return retrieval
    first_named: dict[str, ScoredNote] = {}
    for item in sorted(retrieval.notes, key=lambda scored: scored.note.timestamp):
        for name in medicine_words(item.note.content):
            first_named.setdefault(name, item)
    names_it = lambda name, content: porter_stem(name) in word_stems(content)  # noqa: E731
    return with_later_notes(retrieval, dict(sorted(first_named.items())), find, names_it)
