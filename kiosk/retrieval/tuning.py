"""Retrieval's tuning: the measured defaults a deployer does not set, in one frozen record a benchmark can vary.

The setting (retrieval.k) says what retrieval does; these numbers say how well. Each default was
chosen on LoCoMo (docs/benchmarks.md names the table behind it); a benchmark sweeping one passes its own
`RetrievalTuning` to the Retriever.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class RetrievalTuning:
    relevance_floor: float = 0.4125
    """Best retrieved note's cosine to the question below which no note is used; 0 = off (kiosk.retrieval.relevance).
    The shipped text encoder's calibrated floor (calibration/relevance-<sha>.json)."""

    # The lexical (FTS5 BM25), dated and named rankings fused with the dense one (kiosk.retrieval.hybrid): each
    # ranking's scores min-max normalised per query, weighted and summed.
    fusion: Literal["weighted", "off"] = "weighted"
    """weighted: fuse the rankings; off: the dense ranking alone."""
    dense_weight: float = 1.0
    """Weight of the dense (cosine) ranking; 0 = lexical only."""
    lexical_weight: float = 3.0
    """Weight of the BM25 ranking; 0 = dense only. On LoCoMo BM25 alone finds more evidence than MiniLM alone."""
    date_weight: float = 1.0
    """Weight of the pool's notes from the time a question names with a year ('in mid-August 2023'); 0 = off."""
    date_window_days: int = 30
    """A named date's window: the day before it to this many days after (a note tells it as 'last week')."""
    person_weight: float = 1.0
    """Weight of the pool's notes said by a person the question names; 0 = off (kiosk.retrieval.people)."""
    fusion_depth: int = 50
    """Candidates each ranking hands to the fusion."""

    # Caches (kiosk.retrieval.cache).
    cache_ttl_ms: float = 350.0
    """Lifetime of a cached familiarity result; 0 = no cache."""
    pool_cache_owners: int = 16
    """Matched pools whose embeddings the dated and named searches keep in RAM (about 1.5 MB per 1,000 notes)."""


DEFAULT_TUNING = RetrievalTuning()
