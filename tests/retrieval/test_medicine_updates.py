"""Later notes naming a medicine the chosen notes name join them, for a question about medicine
(kiosk.retrieval.medicine_updates)."""

from __future__ import annotations

from kiosk.retrieval.medicine_updates import MAX_UPDATES, with_medicine_updates
from kiosk.retrieval.results import Retrieval
from tests.retrieval.named_search import finder, scored

TABLETS = "Dad's morning tablets: furosemide 40 mg, bisoprolol 2.5 mg, and metformin 500 mg with his breakfast."
CUT = "Back from the GP. She's cut the furosemide to 20 mg from Monday because his kidney blood test was a bit off."
OLDER = "The hospital started Dad on furosemide 40 mg for the swelling."
BINS = "The bins go out on Monday night."


CHOSEN = Retrieval(path="familiarity", notes=[scored(TABLETS, 5, 1), scored(BINS, 6, 2)])


def test_a_later_note_changing_a_chosen_medicine_joins_in_time_order() -> None:
    asked, find = finder(scored(CUT, 20, 3), scored(OLDER, 1, 4), scored(BINS, 6, 2))
    found = with_medicine_updates(CHOSEN, "Which tablets does Dad take in the morning now?", find)
    assert [item.note.content for item in found.notes] == [TABLETS, BINS, CUT]  # not the older note, nor twice
    assert sorted(asked) == ["bisoprolol", "furosemide", "metformin"]


def test_nothing_joins_a_question_not_about_medicine_or_an_empty_retrieval() -> None:
    asked, find = finder(scored(CUT, 20, 3))
    assert with_medicine_updates(CHOSEN, "When do the bins go out?", find) is CHOSEN
    empty = Retrieval(path=None, notes=[])
    assert with_medicine_updates(empty, "Which tablets does Dad take?", find) is empty
    assert asked == []


def test_a_note_not_naming_the_medicine_and_more_than_the_cap_do_not_join() -> None:
    later = [scored(f"Furosemide check number {day}.", day, 10 + day) for day in range(20, 26)]
    _, find = finder(scored("Dad's knee is sore again.", 21, 9), *later)
    found = with_medicine_updates(CHOSEN, "Is Dad still on the furosemide?", find)
    joined = [item for item in found.notes if item.note.id not in (1, 2)]
    assert len(joined) == MAX_UPDATES
    assert [item.note.timestamp.day for item in joined] == [23, 24, 25]  # the newest
