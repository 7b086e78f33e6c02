"""Fusion of the dense and lexical rankings: the arithmetic, and the retriever on the real store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from doubles import unit

from kiosk.config import RetrievalConfig
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever
from kiosk.retrieval.hybrid import fuse
from kiosk.retrieval.tuning import RetrievalTuning


def test_weighted_fusion_normalises_each_ranking_to_unit_range() -> None:
    tuning = RetrievalTuning(dense_weight=1.0, lexical_weight=0.5)
    fused = dict(fuse([(1, 0.9), (2, 0.5), (3, 0.7)], [(3, 12.0), (4, 2.0)], tuning, 10))
    assert fused == pytest.approx({1: 1.0, 2: 0.0, 3: 0.5 + 0.5, 4: 0.0})
    assert [note_id for note_id, _ in fuse([(1, 0.9), (2, 0.5), (3, 0.7)], [(3, 12.0)], tuning, 2)] == [1, 3]


def test_zero_weight_drops_a_ranking_and_ties_break_by_id() -> None:
    tuning = RetrievalTuning(lexical_weight=0.0)
    assert [i for i, _ in fuse([(5, 0.9), (4, 0.8)], [(9, 3.0)], tuning, 10)] == [5, 4]
    tied = RetrievalTuning(dense_weight=1.0, lexical_weight=1.0)
    assert [i for i, _ in fuse([(7, 0.9)], [(3, 1.0)], tied, 10)] == [3, 7]


def _world(store: SqliteStore) -> tuple[int, int, np.ndarray, int]:
    """One owner whose only note naming the lighthouse is far from the question in embedding space."""
    rng = np.random.default_rng(3)
    owner, other = store.add_user("ann").id, store.add_user("bob").id
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    start = datetime(2023, 5, 1, tzinfo=UTC)
    for day in range(20):
        near = unit(query + 0.5 * unit(rng.standard_normal(EMBEDDING_DIM)))
        store.add_note(Note(None, owner, "face", f"chat on day {day}", start + timedelta(days=day), embedding=near))
        store.add_note(Note(None, other, "face", "the lighthouse", start + timedelta(days=day), embedding=near))
    far = store.add_note(
        Note(None, owner, "face", "we climbed the lighthouse", start, embedding=unit(-query)),
    )
    assert far.id is not None
    return owner, other, query, far.id


def test_fusion_brings_a_lexical_match_the_dense_path_misses(store: SqliteStore) -> None:
    owner, _, query, far = _world(store)
    question = "When did they climb the lighthouse?"
    familiarity = RetrievalConfig()
    dense = Retriever(store, familiarity, tuning=RetrievalTuning(fusion="off")).retrieve([owner], query, question, k=5)
    assert far not in dense.note_ids
    fused = Retriever(store, familiarity).retrieve([owner], query, question, k=5)
    assert far in fused.note_ids and len(fused.note_ids) == 5
    stamps = [(item.note.timestamp, item.note.id) for item in fused.notes]
    assert stamps == sorted(stamps)


def test_lexical_only_returns_the_owners_matches_only(store: SqliteStore) -> None:
    owner, other, query, far = _world(store)
    retriever = Retriever(store, RetrievalConfig(), tuning=RetrievalTuning(dense_weight=0.0))
    result = retriever.retrieve([owner], query, "the lighthouse?", k=5)
    assert result.path == "lexical" and result.note_ids == [far]
    assert len(retriever.retrieve([other], query, "the lighthouse?", k=5).note_ids) == 5
    assert retriever.retrieve([owner], query, "what was it?", k=5).note_ids == []


def test_a_note_from_the_named_time_is_retrieved_though_others_are_closer(store: SqliteStore) -> None:
    """Every August note matches "August 2023" lexically (the index holds date forms); only the dated ranking
    knows which of them fall in the days after 14 August."""
    rng = np.random.default_rng(5)
    owner, other = store.add_user("ann").id, store.add_user("bob").id
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    start = datetime(2023, 8, 1, tzinfo=UTC)
    for day in range(10):
        near = unit(query + 0.3 * unit(rng.standard_normal(EMBEDDING_DIM)))
        store.add_note(Note(None, owner, "face", f"chat {day}", start + timedelta(days=day), embedding=near))
    later = datetime(2023, 8, 15, tzinfo=UTC)
    aside = unit(rng.standard_normal(EMBEDDING_DIM))
    dated = store.add_note(Note(None, owner, "face", "started lifting", later, embedding=aside))
    store.add_note(Note(None, other, "face", "started lifting", later, embedding=query))
    question = "What did Ann do on 14 August, 2023?"
    familiarity = RetrievalConfig()
    plain = Retriever(store, familiarity, tuning=RetrievalTuning(date_weight=0.0)).retrieve(
        [owner], query, question, k=5
    )
    assert dated.id not in plain.note_ids
    dating = Retriever(store, familiarity, tuning=RetrievalTuning(date_weight=1.0))
    found = dating.retrieve([owner], query, question, k=5)
    assert dated.id in found.note_ids and len(found.note_ids) == 5
    assert {item.note.owner_id for item in found.notes} == {owner}
    hidden = dating.retrieve([owner], query, question, k=5, exclude={int(dated.id or 0)})
    assert dated.id not in hidden.note_ids and len(hidden.note_ids) == 5
