"""The scope term of the ranking: the pool's scopes decide, identically on every retrieval path."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from kiosk.config import ForgettingConfig, RetrievalConfig
from kiosk.memory import EMBEDDING_DIM, Note, SqliteStore
from kiosk.retrieval import Retriever
from kiosk.retrieval.ranking import Ranking, ScopeWeights
from kiosk.retrieval.tuning import RetrievalTuning


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(EMBEDDING_DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("fusion", ["weighted", "off", "lexical-only"])
def test_the_pool_scope_outranks_an_equal_public_note(fusion: str) -> None:
    with SqliteStore(":memory:") as store:
        first, second = store.add_user("First").id, store.add_user("Second").id
        stamp = datetime(2024, 1, 1, tzinfo=UTC)
        ids = {
            owner: int(
                store.add_note(Note(None, owner, "face", f"note of {owner}", stamp, embedding=_vector(1))).id or 0
            )
            for owner in (first, second)
        }
        config = RetrievalConfig()
        tuning = RetrievalTuning(
            cache_ttl_ms=0,
            fusion="weighted" if fusion == "lexical-only" else fusion,  # type: ignore[arg-type]
            dense_weight=0.0 if fusion == "lexical-only" else 1.0,
        )
        retriever = Retriever(store, config, ScopeWeights(beta=0.3), ForgettingConfig(), tuning)
        # Equal cosine and equal BM25 ("note" in both): plain ranking takes the lower id; the pool calls `first`
        # public, so `second` wins, also after fusion (which alone would keep `first` ahead).
        pool = {first: "public", second: "personal"}
        found = retriever.retrieve([first, second], _vector(1), "the note", k=1, scopes=pool)
        assert found.note_ids == [ids[second]]
        assert found.notes[0].score == pytest.approx(1.0 + 0.3, abs=1e-5)
        plain = Retriever(store, config, tuning=tuning).retrieve([first, second], _vector(1), "the note", k=1)
        assert plain.note_ids == [ids[first]]


def test_plain_cosine_detection() -> None:
    ranking = Ranking(beta=0.05)
    assert ranking.is_plain_cosine(["personal"])
    assert not ranking.is_plain_cosine(["personal", "public"])
    assert Ranking(beta=0.0).is_plain_cosine(["personal", "group", "public"])
    assert ranking.max_bias == pytest.approx(0.05)
