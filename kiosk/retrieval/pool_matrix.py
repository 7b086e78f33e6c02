"""Exact search over one matched pool held in memory: by cosine (optionally with a per-row scope / strength bias),
within the times a question names, or among the notes said by a person it names."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SearchResult = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(note ids int64, similarities float64, embeddings (n, d) float64), best first."""


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

    def search(self, query: np.ndarray, n: int) -> SearchResult:
        """Top n by cosine, with it, best first (equal cosines by note id)."""
        if len(self) == 0 or n < 1:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros((0, self.embeddings.shape[1]))
        sims = (self.embeddings @ np.asarray(query, dtype=np.float32)).astype(np.float64)
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
