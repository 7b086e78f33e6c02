"""Retrieval inside the matched pool: the familiarity path (cosine top-K), fused with BM25 lexical matches of the
same pool (unless the tuning's `fusion` is off); chronological out."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from datetime import UTC, date, datetime

import numpy as np

from kiosk.config import ForgettingConfig, RetrievalConfig
from kiosk.memory.note import to_epoch
from kiosk.memory.store import Store
from kiosk.retrieval.cache import VersionedCache, owner_versions
from kiosk.retrieval.dates import date_windows, named_days
from kiosk.retrieval.familiarity import exact_similarities, top_similar
from kiosk.retrieval.hybrid import IdRanking, fuse, fused_ceiling, lexical_hits, scored_notes
from kiosk.retrieval.mentioned_dates import merged, naming_search, note_days
from kiosk.retrieval.people import context_speaker, named_people
from kiosk.retrieval.pool_matrix import PoolMatrix
from kiosk.retrieval.ranking import PLAIN_COSINE, Ranking, ScopeWeights
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning


def _kept(ranking: IdRanking, excluded: frozenset[int]) -> IdRanking:
    return [pair for pair in ranking if pair[0] not in excluded] if excluded else ranking


def chronological(notes: Sequence[ScoredNote]) -> list[ScoredNote]:
    return sorted(notes, key=lambda item: (item.note.timestamp, int(item.note.id or 0)))


class Retriever:
    """Finds the K notes for a question among the given owners' notes only.

    `owner_ids` must come from the gate: nothing here ever looks at another owner's partition.
    `scopes` (owner id -> 'personal' | 'group' | 'public', from the gate's scoped pool) feeds the scope term
    of the ranking; without scope and forgetting settings the ranking is plain cosine. `tuning`: the measured
    defaults (DEFAULT_TUNING) unless a benchmark or a test varies them.
    """

    def __init__(
        self,
        store: Store,
        config: RetrievalConfig,
        scopes: ScopeWeights | None = None,
        forgetting: ForgettingConfig | None = None,
        tuning: RetrievalTuning | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.scopes_config = scopes
        self.forgetting_config = forgetting
        self.tuning = tuning or DEFAULT_TUNING
        self._familiarity_cache: VersionedCache[Retrieval] = VersionedCache(self.tuning.cache_ttl_ms / 1000.0)
        self._pools: VersionedCache[PoolMatrix] = VersionedCache(None, capacity=self.tuning.pool_cache_owners)
        self._note_days: VersionedCache[dict[int, frozenset[date]]] = VersionedCache(
            None, capacity=self.tuning.pool_cache_owners
        )

    def retuned(self, tuning: RetrievalTuning) -> Retriever:
        """A retriever of the same store and settings with other tuning (and empty caches)."""
        return Retriever(self.store, self.config, self.scopes_config, self.forgetting_config, tuning)

    def retrieve(
        self,
        owner_ids: Sequence[int],
        query: np.ndarray,
        query_text: str,
        *,
        k: int | None = None,
        scopes: Mapping[int, str] | None = None,
        now: datetime | None = None,
        exclude: Set[int] = frozenset(),
        asked_at: datetime | None = None,
    ) -> Retrieval:
        """`exclude`: note ids that must not be returned (sensitive notes this query is not cleared for).
        `asked_at`: the question's local time at the terminal (kiosk.local_time); with it, days named without a
        year ("on the 14th", "next Tuesday") rank the notes said then and the notes that name them."""
        k = k or self.config.k
        owners = tuple(sorted(set(int(o) for o in owner_ids)))
        if not owners:
            return Retrieval(path=None, notes=[])
        started = time.perf_counter()
        owner_scopes = {owner: (scopes or {}).get(owner, "personal") for owner in owners}
        ranking = self.ranking(now)
        scope_kinds = sorted(set(owner_scopes.values()))
        versions = owner_versions(self.store, owners)
        excluded = frozenset(int(i) for i in exclude)
        scoped = tuple(sorted(owner_scopes.items()))
        asked_day = (asked_at.date(), str(asked_at.tzinfo)) if asked_at is not None else None
        key = (owners, scoped, " ".join(query_text.split()).casefold(), k, excluded, asked_day)
        cached = self._familiarity_cache.get(key, versions) if not ranking.uses_strength else None
        if cached is not None:
            elapsed = (time.perf_counter() - started) * 1000.0
            return replace(cached, cache_hit=True, timings_ms={"retrieve": elapsed})
        context = _Context(owners, versions, owner_scopes, scope_kinds, ranking, query_text, excluded, asked_at)
        if self.fusing and self.tuning.dense_weight == 0:
            result = Retrieval("lexical", chronological(self._lexical_only(context, query, k)))
        elif self.fusing:
            dense = self.store.knn(
                owners, query, min(self.store.max_k, max(k, self.tuning.fusion_depth) + len(excluded))
            )
            result = Retrieval("familiarity", chronological(self._fused(context, dense, query, k)))
        else:
            hits = top_similar(self.store, owners, query, k, ranking, owner_scopes, excluded)
            result = Retrieval("familiarity", chronological(hits))
        result = replace(result, timings_ms={"retrieve": (time.perf_counter() - started) * 1000.0})
        if result.path == "familiarity":
            self._familiarity_cache.put(key, versions, result)
        return result

    @property
    def fusing(self) -> bool:
        return self.tuning.fusion != "off" and self.tuning.lexical_weight > 0

    def ranking(self, now: datetime | None = None) -> Ranking:
        if self.scopes_config is None or self.forgetting_config is None:
            return PLAIN_COSINE
        return Ranking.from_config(self.scopes_config, self.forgetting_config, now or datetime.now(UTC))

    def _fused(self, context: _Context, dense: IdRanking, query: np.ndarray, k: int) -> list[ScoredNote]:
        """The dense ranking (best first) fused with the pool's lexical top `fusion_depth`; top k notes.

        Excluded notes are dropped from both lists (the lexical one over-fetched so its depth stays the same).
        With a scope or strength term in force, the fused score divided into [0, 1] takes cosine's place in the
        ranking: alpha * fused + beta * relevance(scope) + gamma * strength, over every fused candidate, so a
        public note never outranks a personal one because the fusion ignored the term.
        """
        excluded = context.excluded
        found = self.store.lexical(
            context.owners, context.query_text, min(self.store.max_k, self.tuning.fusion_depth + len(excluded))
        )
        lexical = list(_kept(found, excluded))[: self.tuning.fusion_depth]
        dense = _kept(dense, excluded)
        dated = self._dated(context, query)
        named = self._named(context, query)
        ranking = context.ranking
        if ranking.is_plain_cosine(context.scope_kinds):
            return scored_notes(self.store, fuse(dense, lexical, self.tuning, k, dated, named), query)
        depth = len(dense) + len(lexical) + len(dated) + len(named)
        candidates = fuse(dense, lexical, self.tuning, depth, dated, named)
        ceiling = fused_ceiling(dense, lexical, self.tuning, dated, named)
        fused = {note_id: score / ceiling for note_id, score in candidates}
        notes = self.store.get_notes([note_id for note_id, _ in candidates])
        semantic = np.array([fused[int(note.id or 0)] for note in notes], dtype=np.float64)
        scores = ranking.scores(semantic, notes, context.owner_scopes)
        order = sorted(range(len(notes)), key=lambda row: (-scores[row], int(notes[row].id or 0)))[:k]
        sims = exact_similarities([notes[row] for row in order], query)
        return [ScoredNote(notes[row], float(sim), float(scores[row])) for row, sim in zip(order, sims, strict=True)]

    def _dated(self, context: _Context, query: np.ndarray) -> IdRanking:
        """The pool's notes from the time the question names, by cosine (none without a dated mention)."""
        if self.tuning.date_weight <= 0:
            return []
        asked_at = context.asked_at
        windows = date_windows(context.query_text, self.tuning.date_window_days, asked_at)
        if not windows:
            return []
        spans = [(to_epoch(window.start), to_epoch(window.end)) for window in windows]
        pool = self.pool(context.owners, context.versions)
        said_then = pool.dated_search(query, self.tuning.fusion_depth, spans, context.excluded)
        days = set(named_days(context.query_text, asked_at)) if asked_at is not None else set()
        if asked_at is None or not days:
            return said_then
        key = (context.owners, str(asked_at.tzinfo))
        days_by_id = self._note_days.get(key, context.versions)
        if days_by_id is None:
            days_by_id = note_days(self.store.get_notes(pool.ids.tolist()), asked_at.tzinfo)
            self._note_days.put(key, context.versions, days_by_id)
        n = self.tuning.fusion_depth
        naming = naming_search(pool.ids, pool.embeddings, days_by_id, days, query, n, context.excluded)
        return merged(said_then, naming, n)

    def _named(self, context: _Context, query: np.ndarray) -> IdRanking:
        """The pool's notes whose context names a person the question names, by cosine (none if it names none)."""
        if self.tuning.person_weight <= 0:
            return []
        names = named_people(context.query_text)
        if not names:
            return []
        pool = self.pool(context.owners, context.versions)
        if pool.people is None:  # read once per pool version, and only for questions that name someone
            notes = self.store.get_notes(pool.ids.tolist())
            speakers = {int(note.id or 0): context_speaker(note.context) for note in notes}
            pool.people = [speakers.get(int(note_id), frozenset()) for note_id in pool.ids]
        return pool.named_search(query, self.tuning.fusion_depth, names, context.excluded)

    def _lexical_only(self, context: _Context, query: np.ndarray, k: int) -> list[ScoredNote]:
        """`dense_weight` 0: the pool's BM25 matches, ranked by BM25 alone unless a scope or strength term is on."""
        if context.ranking.is_plain_cosine(context.scope_kinds):
            excluded = context.excluded
            hits = lexical_hits(
                self.store, context.owners, query, context.query_text, min(self.store.max_k, k + len(excluded))
            )
            return [hit for hit in hits if hit.note.id not in excluded][:k]
        return self._fused(context, [], query, k)

    def forget_owner(self, owner_id: int) -> int:
        """Evict cached results and pooled embeddings that hold this owner's notes; returns how many."""
        return (
            self._familiarity_cache.discard_owner(owner_id)
            + self._pools.discard_owner(owner_id)
            + self._note_days.discard_owner(owner_id)
        )

    def pool(self, owners: tuple[int, ...], versions: tuple[tuple[int, int], ...] | None = None) -> PoolMatrix:
        """The matched owners' embeddings in memory, reloaded whenever one of them has been written to."""
        versions = versions if versions is not None else owner_versions(self.store, owners)
        cached = self._pools.get(owners, versions)
        if cached is not None:
            return cached
        parts = [self.store.owner_matrix([owner]) for owner in owners]
        ids = np.concatenate([part[0] for part in parts])
        embeddings = np.concatenate([part[2] for part in parts])
        row_owners = np.concatenate(
            [np.full(len(part[0]), owner, np.int64) for owner, part in zip(owners, parts, strict=True)]
        )
        pool = PoolMatrix(ids, embeddings, row_owners, np.concatenate([part[1] for part in parts]))
        self._pools.put(owners, versions, pool)
        return pool


class _Context:
    """One query's pool: owners, their write versions, their scopes, the ranking in force, the question and the
    notes it must not return."""

    def __init__(
        self,
        owners: tuple[int, ...],
        versions: tuple[tuple[int, int], ...],
        owner_scopes: dict[int, str],
        scope_kinds: list[str],
        ranking: Ranking,
        query_text: str,
        excluded: frozenset[int],
        asked_at: datetime | None = None,
    ) -> None:
        self.owners = owners
        self.versions = versions
        self.owner_scopes = owner_scopes
        self.scope_kinds = scope_kinds
        self.ranking = ranking
        self.query_text = query_text
        self.excluded = excluded
        self.asked_at = asked_at
