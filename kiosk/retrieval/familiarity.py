"""Familiarity path: one-shot top-K by cosine inside the matched owners' partitions (sqlite-vec)."""

from __future__ import annotations

from collections.abc import Sequence, Set

import numpy as np

from kiosk.memory.note import Note
from kiosk.memory.sqlite_store import MAX_K
from kiosk.memory.store import Store
from kiosk.retrieval.results import ScoredNote

SLACK = 8
"""Extra candidates asked of the vector index so exact re-scoring can settle near-ties at the K boundary."""

TIE_TOLERANCE = 1e-5
"""float32 distances of the index: candidates this close to the K-th are a tie the exact re-score must see."""


def exact_similarities(notes: Sequence[Note], query: np.ndarray) -> np.ndarray:
    """Cosine of each note's stored embedding with the (unit) query, in float64."""
    if not notes:
        return np.zeros(0, dtype=np.float64)
    matrix = np.stack([np.asarray(n.embedding, dtype=np.float64) for n in notes])
    norms = np.linalg.norm(matrix, axis=1)
    return np.asarray((matrix @ np.asarray(query, dtype=np.float64)) / np.where(norms > 0, norms, 1.0))


def rank_by_similarity(notes: Sequence[Note], query: np.ndarray) -> list[ScoredNote]:
    """Best first; equal similarities fall back to the note id so the order never depends on the index.

    Equal means equal to 9 decimals: BLAS gives identical rows of one matrix product results that differ in
    the last bits (by row position), which must not decide between two copies of the same embedding.
    """
    sims = exact_similarities(notes, query)
    ranked = sorted(zip(notes, sims, strict=True), key=lambda pair: (-round(float(pair[1]), 9), int(pair[0].id or 0)))
    return [ScoredNote(note, float(sim), float(sim)) for note, sim in ranked]


def top_similar(
    store: Store, owner_ids: Sequence[int], query: np.ndarray, depth: int, exclude: Set[int] = frozenset()
) -> list[ScoredNote]:
    """The `depth` most similar notes of these owners but `exclude`, searched only in their vec0 partitions.

    The index's float32 distances pick the candidates; the stored embeddings re-score them exactly.
    Excluded notes (withheld sensitive ones) are over-fetched and dropped, so `depth` notes still come back.
    """
    if not owner_ids or depth < 1:
        return []
    query32 = np.asarray(query, dtype=np.float32)
    reach = depth + len(exclude)  # excluded (withheld) notes may take places in the index's list
    wanted = min(MAX_K, reach + SLACK)
    found = store.knn(owner_ids, query32, wanted)
    # The index orders equal distances arbitrarily: while the tie at the K-th place runs past the page, widen
    # it, so that ties are settled by note id below and never by the index.
    while len(found) == wanted < MAX_K and found[-1][1] >= found[min(reach, len(found)) - 1][1] - TIE_TOLERANCE:
        wanted = min(MAX_K, wanted * 2)
        found = store.knn(owner_ids, query32, wanted)
    notes = store.get_notes([note_id for note_id, _ in found if note_id not in exclude])
    return rank_by_similarity([n for n in notes if n.embedding is not None], query)[:depth]


def familiarity(store: Store, owner_ids: Sequence[int], query: np.ndarray, k: int) -> list[ScoredNote]:
    """RF-Mem's familiarity path: the K most similar notes of the matched pool, best first."""
    return top_similar(store, owner_ids, query, k)
