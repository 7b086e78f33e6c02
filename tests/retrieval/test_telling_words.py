"""A retrieval under the relevance floor is kept when its best note alone holds a telling word of the question
(kiosk.retrieval.telling_words)."""

from __future__ import annotations

from datetime import UTC, datetime

from kiosk.memory import Note
from kiosk.retrieval.relevance import apply_floor
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.telling_words import best_note_alone_holds_a_telling_word, telling_words

EXERCISES = "The physiotherapist comes on Tuesdays and Fridays at ten. I have to do my exercises twice a day."
SHOPPING = "Shopping list: lactose-free milk for Georges, bread, eggs, and sugar-free squash for Lina."
BOUGHT = "I bought the eggs and the bread already."
WIFI = "The wifi password, if the tablet drops off again, is BlueJay-4417."
PILLS = "My pills: donepezil, 5 milligrams at bedtime, and the vitamin D on Sundays."


def _retrieval(*notes: tuple[str, float]) -> Retrieval:
    stamp = datetime(2026, 11, 1, tzinfo=UTC)
    scored = [ScoredNote(Note(i + 1, 1, "palm", text, stamp), sim, sim) for i, (text, sim) in enumerate(notes)]
    return Retrieval("familiarity", scored)


def test_time_words_and_common_verbs_tell_nothing() -> None:
    assert telling_words("What do I need to take tomorrow this week?") == frozenset()
    assert telling_words("What is the name of my boss at work?") == frozenset({"boss", "work"})
    assert telling_words("Which exercises do I have to do?") == frozenset({"exercis"})


def test_the_best_note_alone_holding_a_telling_word_is_about_the_question() -> None:
    assert best_note_alone_holds_a_telling_word("Which exercises do I have to do?", EXERCISES, [SHOPPING])
    assert best_note_alone_holds_a_telling_word("What's still on the shopping list?", SHOPPING, [BOUGHT])


def test_a_word_another_note_holds_or_a_weaker_note_holds_is_not_enough() -> None:
    assert not best_note_alone_holds_a_telling_word("Are the eggs bought?", SHOPPING, [BOUGHT])
    assert not best_note_alone_holds_a_telling_word("What tablets am I on right now?", PILLS, [WIFI])


def test_the_floor_keeps_a_retrieval_its_best_note_tells_about() -> None:
    below = _retrieval((EXERCISES, 0.407), (SHOPPING, 0.17))
    kept = apply_floor(below, 0.4125, "Which exercises do I have to do?")
    assert [item.note.content for item in kept.notes] == [EXERCISES, SHOPPING] and not kept.below_relevance_floor
    emptied = apply_floor(below, 0.4125, "What's the code for the safe?")
    assert emptied.notes == [] and emptied.below_relevance_floor
    assert apply_floor(below, 0.4125).notes == []  # without the question, the floor alone decides
