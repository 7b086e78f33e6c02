"""Later notes saying an item of a chosen errand list is done: what the question's words miss when it asks what is
still to do.

Asked "What's still on Dad's shopping list?", retrieval chose the two lists ("Shopping for Dad: sugar-free squash,
wholemeal bread, low-salt soup, plantain, and new slippers", "Add to Dad's shopping: glucose tablets for the hypo
box and two cotton vests") but not "Picked up the low-salt soup for Femi on my way in" nor "Bought the glucose
tablets, they're in the hypo box": they share no word with the question, and the answer listed the tablets as
still to buy. The answer step that strikes done items (kiosk.llm.done_items) can strike only what the prompt holds.

So, for a question asking what is still to do on an errand (kiosk.llm.done_items.asks_what_is_still_to_do), for
each item a chosen note lists after a colon, the notes said after that note that name the item's last word
before any "for"/"with" ("soup", "tablets") and say it is done ("picked up", "bought") join the chosen notes:
found by a retrieval for the item through the same gate, scopes and exclusions as the question's own (`find`), at
most MAX_UPDATES of them, the newest first. The prompt keeps its time order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kiosk.llm.answer_form import content_stems
from kiosk.llm.done_items import DONE, asks_what_is_still_to_do
from kiosk.llm.still_to_do import listings
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.retriever import chronological

MAX_UPDATES = 3


def with_errand_updates(retrieval: Retrieval, question: str, find: Callable[[str], Retrieval]) -> Retrieval:
    """`retrieval` with the later notes saying an item its notes list is done, for a `question` asking what is
    still to do on an errand (see the module's docstring)."""
    if not retrieval.notes or not asks_what_is_still_to_do(question):
        return retrieval
    chosen = {item.note.id for item in retrieval.notes}
    updates: dict[object, ScoredNote] = {}
    for listed in retrieval.notes:
        for item, head in (item for _, items in listings(listed.note.content) for item in items):
            for found in find(item).notes:
                later = found.note.timestamp > listed.note.timestamp
                content = found.note.content
                if later and found.note.id not in chosen and head in content_stems(content) and DONE.search(content):
                    updates[found.note.id] = found
    if not updates:
        return retrieval
    newest = sorted(updates.values(), key=lambda scored: scored.note.timestamp, reverse=True)[:MAX_UPDATES]
    return replace(retrieval, notes=chronological([*retrieval.notes, *newest]))
