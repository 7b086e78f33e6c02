"""Recollection path (RF-Mem): iterative query expansion by clustering candidates and alpha-mixing.

Per round, every beam query retrieves N candidates from the matched pool; the candidates are clustered
into B groups (k-means; DBSCAN's dense groups found less evidence on LoCoMo, bench/results/clustering.md);
each group's centroid is mixed into the beam query, q' = alpha*q + (1-alpha)*c, renormalised; each beam query keeps its
`fanout` most relevant mixes (mean similarity of the group to the question) and the best B of all mixes
form the next beam.

Ranking and de-duplication (`fuse`): the question's own best ceil(K/2) memories first (recollection must not
lose what familiarity finds), then the expanded queries' result lists merged round-robin in the order the
queries were issued, each memory taken once (re-ranking everything collected by cosine to a Rocchio mix, or by
the best query-weighted similarity, found less evidence: bench/results/retrieval.md). A scope / strength term
(kiosk/retrieval/ranking.py) enters through the search itself (`PoolMatrix.search` ranks by alpha*cosine + bias),
so it orders every candidate list. Expansion ends after R rounds, or when a round no longer changes the top-K
(the evidence has converged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kiosk.retrieval.kmeans import kmeans

SearchResult = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(note ids int64, similarities float64, embeddings (n, d) float64), best first."""
Search = Callable[[np.ndarray, int], SearchResult]


@dataclass(frozen=True)
class RecollectionSettings:
    k: int
    beam: int = 2
    fanout: int = 2
    rounds: int = 4
    candidates: int = 20
    alpha: float = 0.4
    seed: int = 0


@dataclass(frozen=True)
class Recollected:
    ids: list[int]
    scores: list[float]
    rounds: int
    queries: int


class PoolMatrix:
    """Exact cosine search over one matched pool held in memory (rows are that pool's notes only)."""

    def __init__(
        self,
        ids: np.ndarray,
        embeddings: np.ndarray,
        owners: np.ndarray | None = None,
        stamps: np.ndarray | None = None,
        people: Sequence[frozenset[str]] | None = None,
    ) -> None:
        """`stamps`: each row's note time, epoch seconds (needed by `dated_search` only); `people`: the names each
        row's context gives (kiosk/retrieval/people.py; needed by `named_search` only)."""
        # float32 halves the memory and the matmul time of large pools; ranking ties still break by id.
        matrix = np.asarray(embeddings, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True) if matrix.size else np.ones((0, 1), np.float32)
        self.ids = np.asarray(ids, dtype=np.int64)
        self.owners = np.asarray(owners, dtype=np.int64) if owners is not None else np.zeros_like(self.ids)
        self.stamps = np.asarray(stamps, dtype=np.float64) if stamps is not None else None
        self.people: list[frozenset[str]] | None = list(people) if people is not None else None
        self.embeddings = matrix / np.where(norms > 0, norms, np.float32(1.0))

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def search(self, query: np.ndarray, n: int, alpha: float = 1.0, bias: np.ndarray | None = None) -> SearchResult:
        """Top n by alpha * cosine + bias (per row; None: plain cosine), with that score, best first."""
        if len(self) == 0 or n < 1:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros((0, self.embeddings.shape[1]))
        sims = (self.embeddings @ np.asarray(query, dtype=np.float32)).astype(np.float64)
        if bias is not None:
            sims = alpha * sims + bias
        n = min(n, len(self))
        part = np.argpartition(-sims, n - 1)[:n] if n < len(self) else np.arange(len(self))
        order = part[np.lexsort((self.ids[part], -sims[part]))]
        return self.ids[order], sims[order], self.embeddings[order].astype(np.float64)

    def dated_search(
        self, query: np.ndarray, n: int, spans: Sequence[tuple[float, float]], excluded: frozenset[int] = frozenset()
    ) -> list[tuple[int, float]]:
        """Top n (note id, cosine) among the rows whose time falls in one of `spans` ([start, end) epoch s)."""
        if self.stamps is None:
            raise ValueError("this pool was built without note times")
        inside = np.zeros(len(self), dtype=bool)
        for start, end in spans:
            inside |= (self.stamps >= start) & (self.stamps < end)
        return self._search_rows(query, n, inside, excluded)

    def named_search(
        self, query: np.ndarray, n: int, names: frozenset[str], excluded: frozenset[int] = frozenset()
    ) -> list[tuple[int, float]]:
        """Top n (note id, cosine) among the rows whose context names one of `names`; none when every row or no
        row does (the names then tell the notes nothing apart)."""
        if self.people is None:
            raise ValueError("this pool was built without the people of its notes")
        inside = np.fromiter((not names.isdisjoint(row) for row in self.people), dtype=bool, count=len(self))
        if inside.all():
            return []
        return self._search_rows(query, n, inside, excluded)

    def _search_rows(
        self, query: np.ndarray, n: int, inside: np.ndarray, excluded: frozenset[int]
    ) -> list[tuple[int, float]]:
        if excluded:
            inside &= ~np.isin(self.ids, np.fromiter(excluded, dtype=np.int64, count=len(excluded)))
        rows = np.flatnonzero(inside)
        if rows.size == 0 or n < 1:
            return []
        sims = (self.embeddings[rows] @ np.asarray(query, dtype=np.float32)).astype(np.float64)
        order = np.lexsort((self.ids[rows], -sims))[:n]
        return [(int(self.ids[rows[i]]), float(sims[i])) for i in order]


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def fuse(origin: list[int], expansions: list[list[int]], k: int) -> list[int]:
    """Question's top ceil(K/2), then the expansion lists round-robin, then the rest of the question's list."""
    keep = -(-k // 2)
    ranked: list[int] = []
    seen: set[int] = set()

    def take(note_id: int) -> None:
        if note_id not in seen and len(ranked) < k:
            seen.add(note_id)
            ranked.append(note_id)

    for note_id in origin[:keep]:
        take(note_id)
    depth = max((len(lst) for lst in expansions), default=0)
    for position in range(depth):
        for lst in expansions:
            if position < len(lst):
                take(lst[position])
    for note_id in origin[keep:]:
        take(note_id)
    return ranked


def recollect(search: Search, question: np.ndarray, settings: RecollectionSettings) -> Recollected:
    """Run RF-Mem recollection; returns the ranked top-K note ids (best first) with their best similarity."""
    origin = _unit(np.asarray(question, dtype=np.float64))
    best_similarity: dict[int, float] = {}
    origin_list: list[int] = []
    expansions: list[list[int]] = []
    beam: list[np.ndarray] = [origin]
    top: list[int] = []
    issued = 0
    rounds_run = 0
    for round_index in range(settings.rounds):
        rounds_run = round_index + 1
        proposals: list[tuple[float, int, np.ndarray]] = []
        for beam_index, query in enumerate(beam):
            ids, sims, embeddings = search(query, settings.candidates)
            issued += 1
            id_list = [int(i) for i in ids.tolist()]
            for note_id, sim in zip(id_list, sims.tolist(), strict=True):
                best_similarity[note_id] = max(best_similarity.get(note_id, -np.inf), float(sim))
            if round_index == 0:
                origin_list = id_list
            else:
                expansions.append(id_list)
            if len(ids):
                proposals.extend(_mixes(query, embeddings, origin, settings, round_index, beam_index))
        new_top = fuse(origin_list, expansions, settings.k)
        converged = round_index > 0 and new_top == top
        top = new_top
        if converged or not proposals:
            break
        proposals.sort(key=lambda item: (-item[0], item[1]))
        beam = []
        for _relevance, _, mixed in proposals:
            if any(float(mixed @ kept) > 0.999 for kept in beam):
                continue  # a near-duplicate query would only fetch the same candidates again
            beam.append(mixed)
            if len(beam) == settings.beam:
                break
    return Recollected(top, [best_similarity[i] for i in top], rounds_run, issued)


def _mixes(
    query: np.ndarray,
    embeddings: np.ndarray,
    origin: np.ndarray,
    settings: RecollectionSettings,
    round_index: int,
    beam_index: int,
) -> list[tuple[float, int, np.ndarray]]:
    """This beam query's `fanout` best mixed queries as (relevance, tie-break order, query)."""
    labels, centroids = kmeans(embeddings, settings.beam, seed=settings.seed + 7919 * round_index + beam_index)
    relevance_to_origin = embeddings @ origin
    mixes: list[tuple[float, int, np.ndarray]] = []
    for group, centroid in enumerate(centroids):
        members = labels == group
        if not members.any():
            continue
        mixed = _unit(settings.alpha * query + (1.0 - settings.alpha) * _unit(centroid))
        relevance = float(relevance_to_origin[members].mean())
        mixes.append((relevance, beam_index * 1000 + group, mixed))
    mixes.sort(key=lambda item: (-item[0], item[1]))
    return mixes[: settings.fanout]
