"""Retrieval's tuning: the measured defaults a deployer does not set, in one frozen record a benchmark can vary.

The settings (retrieval.k, retrieval.mode) say what retrieval does; these numbers say how well. Each default was
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

    # RF-Mem's familiarity signal and adaptive choice (kiosk.retrieval.adaptive). The thresholds are calibrated on
    # the text encoder (calibration/adaptive-<sha>.json): on LoCoMo recollection lost recall on every category, so
    # the calibration says "never" (theta_high at cosine's floor) and adaptive runs familiarity.
    k_probe: int = 15
    """Similarities the familiarity signal averages."""
    softmax_lambda: float = 50.0
    """Inverse temperature of the similarity softmax: 50 spreads MiniLM cosines' entropy across tau_entropy."""
    theta_high: float = -1.0
    """Mean top-k_probe similarity at or above which familiarity runs."""
    theta_low: float = -1.0
    """Mean top-k_probe similarity at or below which recollection runs."""
    tau_entropy: float = 2.7081
    """Entropy above which recollection runs between the two means (ln k_probe, its maximum: never)."""

    # Recollection (kiosk.retrieval.recollection).
    beam: int = 2
    """Beam width B, also the number of k-means clusters."""
    fanout: int = 2
    """Mixed queries kept per beam query per round."""
    rounds: int = 4
    """Recollection rounds R."""
    candidates: int = 20
    """Candidates N retrieved per beam query per round."""
    recollection_alpha: float | None = None
    """Query weight alpha in alpha*q + (1-alpha)*centroid; None: 0.3 + 0.5*min(1, K/50)."""
    kmeans_seed: int = 0
    """Seed of the recollection k-means (deterministic)."""

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
    """Matched pools whose embeddings recollection keeps in RAM (about 1.5 MB per 1,000 notes)."""


DEFAULT_TUNING = RetrievalTuning()
