"""Familiarity path: one-shot top-K by cosine inside the matched owners' partitions (sqlite-vec)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

import numpy as np

from kiosk.memory.note import Note
from kiosk.memory.store import Store
from kiosk.retrieval.ranking import PLAIN_COSINE, Ranking
from kiosk.retrieval.results import ScoredNote

SLACK = 8
"""Extra candidates asked of the vector index so exact re-scoring can settle near-ties at the K boundary."""
INDEX_TOLERANCE = 1e-5
"""How far the index's float32 cosine may sit from the exact float64 one."""
TIE_TOLERANCE = 1e-5
"""float32 distances of the index: candidates this close to the K-th are a tie the exact re-score must see."""


def exact_similarities(notes: Sequence[Note], query: np.ndarray) -> np.ndarray:
    """Cosine of each note's stored embedding with the (unit) query, in float64."""
    if not notes:
        return np.zeros(0, dtype=np.float64)
    vector = np.asarray(query, dtype=np.float64)
    rows = [np.asarray(n.embedding, dtype=np.float64) for n in notes]
    # One dot product per note, not a matrix product: BLAS rounds a row's product differently depending on its
    # position in the matrix, and equal notes must score exactly equal for ties to break by id.
    dots = np.array([float(np.dot(row, vector)) for row in rows])
    norms = np.array([float(np.linalg.norm(row)) for row in rows])
    return dots / np.where(norms > 0, norms, 1.0)


def rank_by_similarity(notes: Sequence[Note], query: np.ndarray) -> list[ScoredNote]:
    """Best first; equal similarities fall back to the note id so the order never depends on the index.

    Equal means equal to 9 decimals: BLAS gives identical rows of one matrix product results that differ in
    the last bits (by row position), which must not decide between two copies of the same embedding.
    """
    sims = exact_similarities(notes, query)
    ranked = sorted(zip(notes, sims, strict=True), key=lambda pair: (-round(float(pair[1]), 9), int(pair[0].id or 0)))
    return [ScoredNote(note, float(sim), float(sim)) for note, sim in ranked]


def top_similar(
    store: Store,
    owner_ids: Sequence[int],
    query: np.ndarray,
    depth: int,
    ranking: Ranking = PLAIN_COSINE,
    owner_scopes: Mapping[int, str] | None = None,
    exclude: Set[int] = frozenset(),
) -> list[ScoredNote]:
    """The `depth` best-ranked notes of these owners but `exclude`, searched only in their vec0 partitions.

    The index's float32 distances pick the candidates; the stored embeddings re-score them exactly. Excluded
    notes (withheld sensitive ones) are over-fetched and dropped, so `depth` notes still come back. With a
    scope or strength term the candidate list grows until no note left in the index could still enter the
    top `depth`: the term is bounded by `ranking.max_bias`, so a note whose cosine is below the last fetched
    one can score at most alpha * that cosine + max_bias.
    """
    if not owner_ids or depth < 1:
        return []
    vector = np.asarray(query, dtype=np.float32)
    max_k = store.max_k
    reach = depth + len(exclude)  # excluded (withheld) notes may take places in the index's list
    scopes_in_pool = sorted(set((owner_scopes or {}).values())) or ["personal", "group", "public"]
    if ranking.is_plain_cosine(scopes_in_pool):
        wanted = min(max_k, reach + SLACK)
        found = store.knn(owner_ids, vector, wanted)
        # The index orders equal distances arbitrarily: while the tie at the K-th place runs past the page, widen
        # it, so that ties are settled by note id below and never by the index.
        while len(found) == wanted < max_k and found[-1][1] >= found[min(reach, len(found)) - 1][1] - TIE_TOLERANCE:
            wanted = min(max_k, wanted * 2)
            found = store.knn(owner_ids, vector, wanted)
        notes = store.get_notes([note_id for note_id, _ in found if note_id not in exclude])
        return rank_by_similarity([n for n in notes if n.embedding is not None], query)[:depth]
    fetch = reach + SLACK
    while True:
        fetch = min(max_k, fetch)
        found = store.knn(owner_ids, vector, fetch)
        kept = [note_id for note_id, _ in found if note_id not in exclude]
        notes = [n for n in store.get_notes(kept) if n.embedding is not None]
        sims = exact_similarities(notes, query)
        scores = ranking.scores(sims, notes, owner_scopes)
        order = sorted(range(len(notes)), key=lambda row: (-scores[row], int(notes[row].id or 0)))
        if len(found) < fetch or fetch == max_k:  # the index has nothing more
            break
        # A note left in the index has cosine <= the lowest fetched, so it scores at most alpha*that + max_bias;
        # `<` (not `<=`) keeps widening through ties, which are then settled by note id.
        lowest = min(similarity for _, similarity in found) + INDEX_TOLERANCE
        if len(order) >= depth and ranking.alpha * lowest + ranking.max_bias < scores[order[depth - 1]]:
            break
        fetch *= 4
    return [ScoredNote(notes[row], float(sims[row]), float(scores[row])) for row in order[:depth]]


def familiarity(
    store: Store, owner_ids: Sequence[int], query: np.ndarray, k: int, ranking: Ranking = PLAIN_COSINE
) -> list[ScoredNote]:
    """RF-Mem's familiarity path: the K best-ranked notes of the matched pool, best first."""
    return top_similar(store, owner_ids, query, k, ranking)
