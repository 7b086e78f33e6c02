"""Later notes saying an item of a chosen list is done join them, for a question asking what is still to do
(kiosk.retrieval.errand_updates)."""

from __future__ import annotations

from kiosk.retrieval.errand_updates import MAX_UPDATES, with_errand_updates
from kiosk.retrieval.results import Retrieval
from tests.retrieval.named_search import finder, scored

LIST = "Shopping for Dad: sugar-free squash, low-salt soup, plantain, and new slippers with a back to them."
SOUP = "Picked up the low-salt soup for Femi on my way in, it's in the cupboard by the cooker."
SOUP_BEFORE = "Bought low-salt soup last month, he didn't like it."
SOUP_TALK = "Femi says the low-salt soup tastes of nothing."
BINS = "The bins go out on Monday night."


CHOSEN = Retrieval(path="familiarity", notes=[scored(LIST, 2, 1), scored(BINS, 3, 2)])


def test_a_later_note_saying_an_item_is_done_joins_in_time_order() -> None:
    asked, find = finder(scored(SOUP, 14, 3), scored(SOUP_BEFORE, 1, 4), scored(SOUP_TALK, 15, 5))
    found = with_errand_updates(CHOSEN, "What's still on Dad's shopping list?", find)
    # not the soup bought before the list, nor the soup talked of without being done
    assert [item.note.content for item in found.notes] == [LIST, BINS, SOUP]
    assert asked == ["sugar-free squash", "low-salt soup", "plantain", "new slippers"]


def test_nothing_joins_a_question_not_asking_what_is_still_to_do() -> None:
    asked, find = finder(scored(SOUP, 14, 3))
    assert with_errand_updates(CHOSEN, "What soup does Dad like?", find) is CHOSEN
    empty = Retrieval(path=None, notes=[])
    assert with_errand_updates(empty, "What's still on Dad's shopping list?", find) is empty
    assert asked == []


def test_no_more_than_the_cap_join_the_newest_first() -> None:
    later = [scored(f"Got the plantain, round {day}.", day, 10 + day) for day in range(20, 26)]
    _, find = finder(*later)
    found = with_errand_updates(CHOSEN, "What do we still need to buy for Dad?", find)
    joined = [item for item in found.notes if item.note.id not in (1, 2)]
    assert len(joined) == MAX_UPDATES
    assert [item.note.timestamp.day for item in joined] == [23, 24, 25]
