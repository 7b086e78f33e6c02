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

from kiosk.llm.answer_form import content_stems
from kiosk.llm.done_items import DONE, asks_what_is_still_to_do
from kiosk.llm.still_to_do import listings
from kiosk.retrieval.later_notes import MAX_UPDATES, with_later_notes
from kiosk.retrieval.results import Retrieval, ScoredNote

__all__ = ["MAX_UPDATES", "with_errand_updates"]


def with_errand_updates(retrieval: Retrieval, question: str, find: Callable[[str], Retrieval]) -> Retrieval:
    """`retrieval` with the later notes saying an item its notes list is done, for a `question` asking what is
    still to do on an errand (see the module's docstring); each item is searched for once, after the first note
    listing it."""
    if not retrieval.notes or not asks_what_is_still_to_do(question):
        return retrieval
    first_listed: dict[str, ScoredNote] = {}
    heads: dict[str, str] = {}
    for listed in sorted(retrieval.notes, key=lambda scored: scored.note.timestamp):
        for _, items in listings(listed.note.content):
            for item, head in items:
                first_listed.setdefault(item, listed)
                heads[item] = head
    says_done = lambda item, content: heads[item] in content_stems(content) and bool(DONE.search(content))  # noqa: E731
    return with_later_notes(retrieval, first_listed, find, says_done)
