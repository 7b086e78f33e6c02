"""Retriever on the real store: caches follow writes, output is chronological."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from doubles import unit

from kiosk.config import RetrievalConfig
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever


def add(store: SqliteStore, owner: int, embedding: np.ndarray, day: int) -> int:
    note = store.add_note(
        Note(
            id=None,
            owner_id=owner,
            modality="face",
            content=f"day {day}",
            timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=day),
            embedding=embedding,
        )
    )
    assert note.id is not None
    return note.id


def test_familiarity_output_is_chronological(store: SqliteStore) -> None:
    rng = np.random.default_rng(0)
    owner = store.add_user("a").id
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    for day in range(30):  # every note is close to the question: a familiar topic
        add(store, owner, unit(query + 0.3 * unit(rng.standard_normal(EMBEDDING_DIM))), (day * 7) % 30)
    result = Retriever(store, RetrievalConfig()).retrieve([owner], query, "q", k=5)
    assert result.path == "familiarity" and len(result.notes) == 5
    assert [n.note.timestamp for n in result.notes] == sorted(n.note.timestamp for n in result.notes)


def test_results_follow_writes(store: SqliteStore) -> None:
    rng = np.random.default_rng(2)
    owner = store.add_user("a").id
    other = store.add_user("b").id
    for day in range(10):
        add(store, owner, unit(rng.standard_normal(EMBEDDING_DIM)), day)
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    retriever = Retriever(store, RetrievalConfig())
    before = retriever.retrieve([owner], query, "q", k=3)
    add(store, other, query, 50)  # another owner's perfect match must never appear
    fresh = add(store, owner, query, 60)
    after = retriever.retrieve([owner], query, "q", k=3)
    assert fresh not in before.note_ids and fresh in after.note_ids
    assert all(item.note.owner_id == owner for item in after.notes)


def test_no_owners_means_no_retrieval(store: SqliteStore) -> None:
    result = Retriever(store, RetrievalConfig()).retrieve([], unit(np.ones(EMBEDDING_DIM)), "q")
    assert result.path is None and result.notes == []
