"""Later notes saying an item of a chosen list is done join them, for a question asking what is still to do
(kiosk.retrieval.errand_updates)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from kiosk.memory import Note
from kiosk.retrieval.errand_updates import MAX_UPDATES, with_errand_updates
from kiosk.retrieval.results import Retrieval, ScoredNote

BISI = 1
LIST = "Shopping for Dad: sugar-free squash, low-salt soup, plantain, and new slippers with a back to them."
SOUP = "Picked up the low-salt soup for Femi on my way in, it's in the cupboard by the cooker."
SOUP_BEFORE = "Bought low-salt soup last month, he didn't like it."
SOUP_TALK = "Femi says the low-salt soup tastes of nothing."
BINS = "The bins go out on Monday night."


def _scored(text: str, day: int, note_id: int) -> ScoredNote:
    note = Note(note_id, BISI, "palm", text, datetime(2026, 11, day, 9, tzinfo=UTC))
    return ScoredNote(note, 0.5, 0.5)


CHOSEN = Retrieval(path="familiarity", notes=[_scored(LIST, 2, 1), _scored(BINS, 3, 2)])


def _finder(*found: ScoredNote) -> tuple[list[str], Callable[[str], Retrieval]]:
    asked: list[str] = []

    def find(item: str) -> Retrieval:
        asked.append(item)
        return Retrieval(path="familiarity", notes=list(found))

    return asked, find


def test_a_later_note_saying_an_item_is_done_joins_in_time_order() -> None:
    asked, find = _finder(_scored(SOUP, 14, 3), _scored(SOUP_BEFORE, 1, 4), _scored(SOUP_TALK, 15, 5))
    found = with_errand_updates(CHOSEN, "What's still on Dad's shopping list?", find)
    # not the soup bought before the list, nor the soup talked of without being done
    assert [item.note.content for item in found.notes] == [LIST, BINS, SOUP]
    assert asked == ["sugar-free squash", "low-salt soup", "plantain", "new slippers"]


def test_nothing_joins_a_question_not_asking_what_is_still_to_do() -> None:
    asked, find = _finder(_scored(SOUP, 14, 3))
    assert with_errand_updates(CHOSEN, "What soup does Dad like?", find) is CHOSEN
    empty = Retrieval(path=None, notes=[])
    assert with_errand_updates(empty, "What's still on Dad's shopping list?", find) is empty
    assert asked == []


def test_no_more_than_the_cap_join_the_newest_first() -> None:
    later = [_scored(f"Got the plantain, round {day}.", day, 10 + day) for day in range(20, 26)]
    _, find = _finder(*later)
    found = with_errand_updates(CHOSEN, "What do we still need to buy for Dad?", find)
    joined = [item for item in found.notes if item.note.id not in (1, 2)]
    assert len(joined) == MAX_UPDATES
    assert [item.note.timestamp.day for item in joined] == [23, 24, 25]
