"""Lexical retrieval (FTS5 BM25) inside the matched pool and its fusion with the dense ranking.

Fusion works on (note id, score) rankings, so only the K notes finally chosen are read from the store.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kiosk.memory.store import Store
from kiosk.retrieval.familiarity import exact_similarities
from kiosk.retrieval.results import ScoredNote
from kiosk.retrieval.tuning import RetrievalTuning

IdRanking = Sequence[tuple[int, float]]
"""(note id, score) best first; the score's scale is the ranker's own (cosine, BM25)."""


def _min_max(values: list[float]) -> list[float]:
    low, high = min(values), max(values)
    if high <= low:
        return [1.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


def _weighted_rankings(
    dense: IdRanking, lexical: IdRanking, dated: IdRanking, named: IdRanking, tuning: RetrievalTuning
) -> list[tuple[IdRanking, float]]:
    pairs = (
        (dense, tuning.dense_weight),
        (lexical, tuning.lexical_weight),
        (dated, tuning.date_weight),
        (named, tuning.person_weight),
    )
    return [(ranking, weight) for ranking, weight in pairs if ranking and weight > 0]


def fuse(
    dense: IdRanking,
    lexical: IdRanking,
    tuning: RetrievalTuning,
    k: int,
    dated: IdRanking = (),
    named: IdRanking = (),
) -> list[tuple[int, float]]:
    """The rankings merged into the top k (note id, fused score), best first; ties fall back to the note id.

    `dated`: the pool's notes from the time the question names (kiosk/retrieval/dates.py), by cosine.
    `named`: the pool's notes whose context names a person the question names (kiosk/retrieval/people.py).
    Each ranking contributes weight * its min-max normalised score (cosine and BM25 each scaled to [0, 1] per query).
    (Reciprocal rank fusion found less evidence on LoCoMo: bench/results/hybrid.md.)
    """
    fused: dict[int, float] = {}
    for ranking, weight in _weighted_rankings(dense, lexical, dated, named, tuning):
        contributions = _min_max([score for _, score in ranking])
        for (note_id, _), contribution in zip(ranking, contributions, strict=True):
            fused[int(note_id)] = fused.get(int(note_id), 0.0) + weight * contribution
    order = sorted(fused, key=lambda note_id: (-fused[note_id], note_id))[:k]
    return [(note_id, fused[note_id]) for note_id in order]


def fused_ceiling(
    dense: IdRanking, lexical: IdRanking, tuning: RetrievalTuning, dated: IdRanking = (), named: IdRanking = ()
) -> float:
    """The highest fused score a note can reach here (first in every non-empty ranking): divides fused scores
    into [0, 1], so a question without lexical matches ranks on the same scale as one with them."""
    weight = sum(weight for _, weight in _weighted_rankings(dense, lexical, dated, named, tuning))
    return weight if weight > 0 else 1.0


def scored_notes(store: Store, ranking: IdRanking, query: np.ndarray) -> list[ScoredNote]:
    """The ranked notes read from the store (ranking order kept): similarity = exact cosine, score = rank score."""
    notes = store.get_notes([note_id for note_id, _ in ranking])
    score = {int(note_id): float(value) for note_id, value in ranking}
    sims = exact_similarities(notes, query)
    return [ScoredNote(note, float(sim), score[int(note.id or 0)]) for note, sim in zip(notes, sims, strict=True)]


def lexical_hits(
    store: Store, owner_ids: Sequence[int], query: np.ndarray, query_text: str, k: int
) -> list[ScoredNote]:
    """The k best BM25 matches among these owners' notes, best first (score = BM25, similarity = cosine)."""
    if not owner_ids or k < 1:
        return []
    return scored_notes(store, store.lexical(owner_ids, query_text, k), query)
