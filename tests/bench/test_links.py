"""Linked notes at retrieval: a linked note closer to the question takes the weakest chosen note's place, only
from the query's pool (same owners, active, not withheld), never another person's note linked by mistake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from bench.bench_links import LinkedRetriever, LinkRule, with_linked
from kiosk.config import RetrievalConfig
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever, ScoredNote
from kiosk.retrieval.familiarity import exact_similarities

QUERY = np.eye(EMBEDDING_DIM, dtype=np.float32)[0]


def at_cosine(cosine: float, axis: int) -> np.ndarray:
    """A unit vector whose cosine to QUERY is `cosine` (the rest on its own axis)."""
    vector = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    vector[0], vector[axis] = cosine, np.sqrt(1.0 - cosine**2)
    return vector


def add(store: SqliteStore, owner: int, cosine: float, axis: int) -> int:
    note = store.add_note(
        Note(
            id=None,
            owner_id=owner,
            modality="face",
            content=f"note {axis}",
            timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=axis),
            embedding=at_cosine(cosine, axis),
        )
    )
    assert note.id is not None
    return note.id


class World:
    """Alice's notes at cosines 0.9, 0.8, 0.5 (chosen) and 0.7 (linked to the best, not chosen); Bob's note at
    0.95, linked to Alice's best by a faulty writer that bypassed the store's same-owner check."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.alice = store.add_user("alice").id
        self.bob = store.add_user("bob").id
        self.best, self.second, self.weakest = (add(store, self.alice, c, a) for c, a in ((0.9, 1), (0.8, 2), (0.5, 3)))
        self.linked = add(store, self.alice, 0.7, 4)
        self.bobs = add(store, self.bob, 0.95, 5)
        store.add_link(self.best, self.linked, "similar")
        for source, target in ((self.best, self.bobs), (self.bobs, self.best)):
            store._conn.execute(
                "INSERT INTO links (source_id, target_id, kind, created_at) VALUES (?, ?, 'similar', ?)",
                (source, target, time.time()),
            )
        self.retriever = Retriever(store, RetrievalConfig())

    def chosen(self, ids: list[int]) -> list[ScoredNote]:
        notes = self.store.get_notes(ids)
        sims = exact_similarities(notes, QUERY)
        return [ScoredNote(n, float(s), 3.0 - rank) for rank, (n, s) in enumerate(zip(notes, sims, strict=True))]

    def linked_ids(
        self, ids: list[int], rule: LinkRule, k: int = 3, excluded: frozenset[int] = frozenset()
    ) -> set[int]:
        pool = self.retriever.pool((self.alice,))
        found = with_linked(self.chosen(ids), pool, QUERY, excluded, k, rule, self.store.get_notes)
        return {int(item.note.id or 0) for item in found}


@pytest.fixture()
def world() -> Iterator[World]:
    with SqliteStore(":memory:") as store:
        yield World(store)


def test_a_linked_note_closer_to_the_question_replaces_the_weakest(world: World) -> None:
    top = [world.best, world.second, world.weakest]
    assert world.linked_ids(top, LinkRule(sources=3, replace=1)) == {world.best, world.second, world.linked}


def test_another_owners_note_linked_by_mistake_never_joins(world: World) -> None:
    best = world.store.get_note(world.best)
    assert best is not None and world.bobs in {link.target_id for link in best.links}  # the faulty link is read
    top = [world.best, world.second, world.weakest]
    got = world.linked_ids(top, LinkRule(sources=3, replace=3))
    assert world.bobs not in got
    assert {world.store.get_note(i).owner_id for i in got} == {world.alice}  # type: ignore[union-attr]


def test_a_withheld_linked_note_never_joins(world: World) -> None:
    top = [world.best, world.second, world.weakest]
    assert world.linked_ids(top, LinkRule(sources=3, replace=3), excluded=frozenset({world.linked})) == set(top)


def test_an_archived_linked_note_never_joins(world: World) -> None:
    world.store.archive_notes([world.linked], datetime(2024, 6, 1, tzinfo=UTC))
    top = [world.best, world.second, world.weakest]
    assert world.linked_ids(top, LinkRule(sources=3, replace=3)) == set(top)


def test_a_linked_note_must_beat_the_displaced_one_by_the_margin(world: World) -> None:
    top = [world.best, world.second, world.weakest]
    assert world.linked_ids(top, LinkRule(sources=3, replace=1, margin=0.25)) == set(top)  # 0.7 < 0.5 + 0.25


def test_only_the_links_of_the_best_ranked_notes_are_followed(world: World) -> None:
    # The best note (the only one with a link) is ranked first: following the top 1 reaches it, so does top 3;
    # listed last with the lowest score it is not among the top 2 followed.
    top = [world.weakest, world.second, world.best]
    assert world.linked_ids(top, LinkRule(sources=2, replace=1)) == set(top)


def test_a_linked_note_joins_a_free_place_without_displacing_anyone(world: World) -> None:
    assert world.linked_ids([world.best], LinkRule(sources=1, replace=0), k=3) == {world.best, world.linked}


def test_the_benchmarked_retriever_never_returns_another_owners_linked_note(world: World) -> None:
    linked = LinkedRetriever(world.retriever, LinkRule(sources=3, replace=3))
    result = linked.retrieve([world.alice], QUERY, "note", k=3)
    assert result.notes and {item.note.owner_id for item in result.notes} == {world.alice}
    assert world.bobs not in result.note_ids
