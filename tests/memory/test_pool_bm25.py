"""BM25 over a pool of owners (kiosk.memory.pool_bm25): a word weighs the same whichever owner holds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.memory import SqliteStore

from .builders import make_note

WORDS = [
    "cake",
    "sunday",
    "bring",
    "dentist",
    "tomatoes",
    "garden",
    "car",
    "tyres",
    "ladder",
    "picnic",
    "drinks",
    "football",
    "kids",
    "whales",
]
QUESTION = "Who is bringing the cake on Sunday to the garden picnic?"


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "memory.db")


def test_a_pool_of_one_owner_and_an_empty_one_scores_to_the_bit_as_fts5(store: SqliteStore) -> None:
    """The pool formula is FTS5's own: adding an owner without notes (a person's public scope) changes nothing,
    so the single-person pools of the LoCoMo protocol keep their exact scores."""
    anna, tom, empty = (store.add_user(name).id for name in ("Anna", "Tom", "Empty"))
    for seed in range(40):
        text = " ".join(WORDS[(seed * 7 + step * 3) % len(WORDS)] for step in range(3 + seed % 9))
        store.add_note(make_note(anna if seed % 3 else tom, text, seed=seed, minutes=seed))
    alone = store.lexical([anna], QUESTION, 10)
    assert len(alone) == 10
    assert store.lexical([anna, empty], QUESTION, 10) == alone


def test_the_same_text_scores_the_same_in_a_small_and_a_large_partition(store: SqliteStore) -> None:
    """FTS5's bm25() counts a word's notes inside one owner's partition: the group's single note about the cake
    outscored the same words in one of Anna's many notes. In a pool both count the pool's notes."""
    anna, family = store.add_user("Anna").id, store.add_group("family").id
    for seed, word in enumerate(WORDS[3:]):
        store.add_note(make_note(anna, f"Remember the {word} on Sunday", seed=seed, minutes=seed))
    own = store.add_note(make_note(anna, "I'll bring the chocolate cake on Sunday", seed=50, minutes=50))
    group = store.add_note(make_note(family, "I'll bring the chocolate cake on Sunday", seed=51, minutes=51))
    scores = dict(store.lexical([anna, family], QUESTION, 10))
    assert scores[own.id] == pytest.approx(scores[group.id], rel=1e-12)
    solo = dict(store.lexical([family], QUESTION, 10))
    assert solo[group.id] > scores[group.id]  # alone, the group partition's one note made "sunday" look rare
