"""Later notes joining the chosen ones: the shared step of kiosk.retrieval.medicine_updates and
kiosk.retrieval.errand_updates, which differ only in what they search for and what a found note must say."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.retriever import chronological

MAX_UPDATES = 3


def with_later_notes(
    retrieval: Retrieval,
    first_said: Mapping[str, ScoredNote],
    find: Callable[[str], Retrieval],
    says_of: Callable[[str, str], bool],
) -> Retrieval:
    """`retrieval` with the notes a search `find` for each key of `first_said` finds that were said after the chosen
    note the key maps to (the first naming it), are not chosen yet and of whose content `says_of(key, content)`
    holds: at most MAX_UPDATES of them, the newest first, searched in `first_said`'s order. The prompt keeps its
    time order."""
    chosen = {item.note.id for item in retrieval.notes}
    updates: dict[object, ScoredNote] = {}
    for key, first in first_said.items():
        for item in find(key).notes:
            later = item.note.timestamp > first.note.timestamp
            if later and item.note.id not in chosen and says_of(key, item.note.content):
                updates[item.note.id] = item
    if not updates:
        return retrieval
    newest = sorted(updates.values(), key=lambda scored: scored.note.timestamp, reverse=True)[:MAX_UPDATES]
    return replace(retrieval, notes=chronological([*retrieval.notes, *newest]))
