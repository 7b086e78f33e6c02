"""Retrieval inside the matched pool: familiarity, recollection or the adaptive choice, fused with BM25
lexical matches of the same pool (unless `fusion` is off); chronological out."""

from __future__ import annotations

import time
from collections.abc import Sequence, Set
from dataclasses import replace

import numpy as np

from kiosk.config import RetrievalConfig
from kiosk.memory.sqlite_store import MAX_K
from kiosk.memory.store import Store
from kiosk.retrieval.adaptive import choose_path, familiarity_signal, mixing_alpha
from kiosk.retrieval.cache import VersionedCache, owner_versions
from kiosk.retrieval.clustering import ClusteringSettings
from kiosk.retrieval.familiarity import exact_similarities, top_similar
from kiosk.retrieval.hybrid import Ranking, fuse, lexical_hits, scored_notes
from kiosk.retrieval.recollection import PoolMatrix, RecollectionSettings, Search, SearchResult, recollect
from kiosk.retrieval.results import FamiliaritySignal, Path, Retrieval, ScoredNote

Mode = str  # "adaptive" | "familiarity" | "recollection"
MODES = ("adaptive", "familiarity", "recollection")


def _without(pool: PoolMatrix, excluded: frozenset[int]) -> Search:
    """The pool's exact search with `excluded` notes dropped (over-fetched so n results still come back)."""
    banned = np.fromiter(excluded, dtype=np.int64, count=len(excluded))

    def search(query: np.ndarray, n: int) -> SearchResult:
        ids, sims, embeddings = pool.search(query, n + len(excluded))
        keep = np.flatnonzero(~np.isin(ids, banned))[:n]
        return ids[keep], sims[keep], embeddings[keep]

    return search


def _kept(ranking: Ranking, excluded: frozenset[int]) -> Ranking:
    return [pair for pair in ranking if pair[0] not in excluded] if excluded else ranking


def chronological(notes: Sequence[ScoredNote]) -> list[ScoredNote]:
    return sorted(notes, key=lambda item: (item.note.timestamp, int(item.note.id or 0)))


class Retriever:
    """Finds the K notes for a question among the given owners' notes only.

    `owner_ids` must come from the gate: nothing here ever looks at another owner's partition.
    """

    def __init__(self, store: Store, config: RetrievalConfig) -> None:
        self.store = store
        self.config = config
        self._familiarity_cache: VersionedCache[Retrieval] = VersionedCache(config.cache_ttl_ms / 1000.0)
        self._pools: VersionedCache[PoolMatrix] = VersionedCache(None, capacity=config.pool_cache_owners)

    def retrieve(
        self,
        owner_ids: Sequence[int],
        query: np.ndarray,
        query_text: str,
        *,
        k: int | None = None,
        mode: Mode | None = None,
        exclude: Set[int] = frozenset(),
    ) -> Retrieval:
        """`exclude`: note ids that must not be returned (sensitive notes this query is not cleared for)."""
        k = k or self.config.k
        mode = mode or self.config.mode
        if mode not in MODES:
            raise ValueError(f"unknown retrieval mode {mode!r}; use one of {MODES}")
        owners = tuple(sorted(set(int(o) for o in owner_ids)))
        if not owners:
            return Retrieval(path=None, notes=[])
        started = time.perf_counter()
        versions = owner_versions(self.store, owners)
        excluded = frozenset(int(i) for i in exclude)
        key = (mode, owners, " ".join(query_text.split()).casefold(), k, excluded)
        cached = self._familiarity_cache.get(key, versions)
        if cached is not None:
            elapsed = (time.perf_counter() - started) * 1000.0
            return replace(cached, cache_hit=True, timings_ms={"retrieve": elapsed})
        if self.fusing and self.config.dense_weight == 0:
            hits = lexical_hits(self.store, owners, query, query_text, min(MAX_K, k + len(excluded)))
            result = Retrieval("lexical", chronological([h for h in hits if h.note.id not in excluded][:k]))
        elif mode == "recollection":
            result = self._recollection(owners, versions, query, query_text, k, None, excluded)
        elif mode == "familiarity" and self.fusing:
            dense = self.store.knn(owners, query, min(MAX_K, max(k, self.config.fusion_depth) + len(excluded)))
            fused = self._fused(owners, _kept(dense, excluded), query, query_text, k, excluded)
            result = Retrieval("familiarity", chronological(fused))
        elif mode == "familiarity":
            result = Retrieval("familiarity", chronological(top_similar(self.store, owners, query, k, excluded)))
        else:
            result = self._adaptive(owners, versions, query, query_text, k, excluded)
        result = replace(result, timings_ms={"retrieve": (time.perf_counter() - started) * 1000.0})
        if result.path == "familiarity":
            self._familiarity_cache.put(key, versions, result)
        return result

    @property
    def fusing(self) -> bool:
        return self.config.fusion != "off" and self.config.lexical_weight > 0

    def _fused(
        self,
        owners: tuple[int, ...],
        dense: Ranking,
        query: np.ndarray,
        query_text: str,
        k: int,
        excluded: frozenset[int] = frozenset(),
    ) -> list[ScoredNote]:
        """The dense ranking (best first) fused with the pool's lexical top `fusion_depth`; top k notes.

        `excluded` notes are dropped from the lexical list too (over-fetched so its depth stays the same)."""
        found = self.store.lexical(owners, query_text, min(MAX_K, self.config.fusion_depth + len(excluded)))
        lexical = list(_kept(found, excluded))[: self.config.fusion_depth]
        return scored_notes(self.store, fuse(_kept(dense, excluded), lexical, self.config, k), query)

    def _adaptive(
        self,
        owners: tuple[int, ...],
        versions: tuple[tuple[int, int], ...],
        query: np.ndarray,
        query_text: str,
        k: int,
        excluded: frozenset[int],
    ) -> Retrieval:
        if self.fusing:
            depth = max(k, self.config.k_probe, self.config.fusion_depth)
            dense = _kept(self.store.knn(owners, query, min(MAX_K, depth + len(excluded))), excluded)
            similarities = [similarity for _, similarity in dense]
        else:
            probed = top_similar(self.store, owners, query, max(k, self.config.k_probe), excluded)
            similarities = [item.similarity for item in probed]
        signal = familiarity_signal(similarities, self.config.k_probe, self.config.softmax_lambda)
        path: Path = choose_path(signal, self.config)
        if path == "familiarity":
            chosen = self._fused(owners, dense, query, query_text, k, excluded) if self.fusing else probed[:k]
            return Retrieval("familiarity", chronological(chosen), signal=signal)
        return self._recollection(owners, versions, query, query_text, k, signal, excluded)

    def _recollection(
        self,
        owners: tuple[int, ...],
        versions: tuple[tuple[int, int], ...],
        query: np.ndarray,
        query_text: str,
        k: int,
        signal: FamiliaritySignal | None,
        excluded: frozenset[int] = frozenset(),
    ) -> Retrieval:
        pool = self.pool(owners, versions)
        settings = RecollectionSettings(
            k=k,
            beam=self.config.beam,
            fanout=self.config.fanout,
            rounds=self.config.rounds,
            candidates=self.config.candidates,
            alpha=self.config.recollection_alpha if self.config.recollection_alpha is not None else mixing_alpha(k),
            seed=self.config.kmeans_seed,
            ranking=self.config.recollection_ranking,
            clustering=ClusteringSettings(
                self.config.clustering,
                self.config.dbscan_min_samples,
                self.config.dbscan_eps_quantile,
                self.config.density_threshold,
            ),
        )
        found = recollect(pool.search if not excluded else _without(pool, excluded), query, settings)
        notes = self.store.get_notes(found.ids)
        sims = exact_similarities(notes, query)
        rank_score = dict(zip(found.ids, found.scores, strict=True))
        scored = [
            ScoredNote(note, float(sim), rank_score[int(note.id or 0)]) for note, sim in zip(notes, sims, strict=True)
        ]
        if self.fusing:  # `scored` is in recollection's ranking order
            ranking = [(int(item.note.id or 0), item.score) for item in scored]
            scored = self._fused(owners, ranking, query, query_text, k, excluded)
        return Retrieval(
            "recollection", chronological(scored), signal=signal, rounds=found.rounds, clusterings=found.clusterings
        )

    def forget_owner(self, owner_id: int) -> int:
        """Evict cached results and pooled embeddings that hold this owner's notes; returns how many."""
        return self._familiarity_cache.discard_owner(owner_id) + self._pools.discard_owner(owner_id)

    def pool(self, owners: tuple[int, ...], versions: tuple[tuple[int, int], ...] | None = None) -> PoolMatrix:
        """The matched owners' embeddings in memory, reloaded whenever one of them has been written to."""
        versions = versions if versions is not None else owner_versions(self.store, owners)
        cached = self._pools.get(owners, versions)
        if cached is not None:
            return cached
        ids, _, embeddings = self.store.owner_matrix(owners)
        pool = PoolMatrix(ids, embeddings)
        self._pools.put(owners, versions, pool)
        return pool
