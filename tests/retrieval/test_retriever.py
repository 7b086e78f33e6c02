"""Retriever on the real store: the adaptive choice is recorded, caches follow writes, output is chronological."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kiosk.config import RetrievalConfig
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever
from kiosk.retrieval.tuning import RetrievalTuning


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@pytest.fixture()
def store() -> Iterator[SqliteStore]:
    with SqliteStore(":memory:") as opened:
        yield opened


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


def test_adaptive_runs_familiarity_on_a_confident_match_and_records_it(store: SqliteStore) -> None:
    rng = np.random.default_rng(0)
    owner = store.add_user("a").id
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    for day in range(30):  # every note is close to the question: a familiar topic
        add(store, owner, unit(query + 0.3 * unit(rng.standard_normal(EMBEDDING_DIM))), (day * 7) % 30)
    result = Retriever(store, RetrievalConfig(mode="adaptive")).retrieve([owner], query, "q", k=5)
    assert result.path == "familiarity"
    assert result.signal is not None and result.signal.mean_similarity >= 0.75
    assert [n.note.timestamp for n in result.notes] == sorted(n.note.timestamp for n in result.notes)


def test_adaptive_runs_recollection_when_nothing_is_familiar(store: SqliteStore) -> None:
    rng = np.random.default_rng(1)
    owner = store.add_user("a").id
    for day in range(40):
        add(store, owner, unit(rng.standard_normal(EMBEDDING_DIM)), day)
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    # Thresholds under which recollection has a place (the shipped MiniLM calibration never chooses it: on LoCoMo
    # it lost recall on every category, bench/results/hybrid.md).
    calibrated = RetrievalTuning(theta_low=0.35, theta_high=0.6, tau_entropy=2.0)
    result = Retriever(store, RetrievalConfig(mode="adaptive"), tuning=calibrated).retrieve([owner], query, "q", k=5)
    assert result.path == "recollection" and result.rounds >= 1
    assert result.signal is not None and result.signal.mean_similarity <= 0.35
    assert len(result.notes) == 5
    shipped = Retriever(store, RetrievalConfig(mode="adaptive")).retrieve([owner], query, "q", k=5)
    assert shipped.path == "familiarity" and shipped.signal == result.signal


def test_recollection_pool_follows_writes(store: SqliteStore) -> None:
    rng = np.random.default_rng(2)
    owner = store.add_user("a").id
    other = store.add_user("b").id
    for day in range(10):
        add(store, owner, unit(rng.standard_normal(EMBEDDING_DIM)), day)
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    retriever = Retriever(store, RetrievalConfig(mode="recollection"))
    before = retriever.retrieve([owner], query, "q", k=3)
    add(store, other, query, 50)  # another owner's perfect match must never appear
    fresh = add(store, owner, query, 60)
    after = retriever.retrieve([owner], query, "q", k=3)
    assert fresh not in before.note_ids and fresh in after.note_ids
    assert all(item.note.owner_id == owner for item in after.notes)


def test_no_owners_means_no_retrieval(store: SqliteStore) -> None:
    result = Retriever(store, RetrievalConfig()).retrieve([], unit(np.ones(EMBEDDING_DIM)), "q")
    assert result.path is None and result.notes == []


def test_unknown_mode_is_rejected(store: SqliteStore) -> None:
    with pytest.raises(ValueError, match="unknown retrieval mode"):
        Retriever(store, RetrievalConfig()).retrieve([1], unit(np.ones(EMBEDDING_DIM)), "q", mode="global")
