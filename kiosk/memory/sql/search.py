"""The vector-index and lexical-index ports on SQL: owner-restricted k-NN and keyword search, the pool matrix
that dated and named search read, and the owner versions that retrieval caches are keyed by."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kiosk.memory.checks import as_vector, check_k
from kiosk.memory.records import best_first, pool_arrays
from kiosk.memory.sql.base import SqlBackend
from kiosk.memory.sql.tx import ALL, owner_list


class SearchIndexes(SqlBackend):
    def knn(self, owner_ids: Sequence[int], query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (note id, cosine similarity) among the given owners' active notes only, best first."""
        vector = as_vector(query, "query embedding")
        check_k(k, self.max_k)
        owners = owner_list(owner_ids)
        if not owners:
            return []
        return best_first(self._reading(owners, lambda tx: self._knn_rows(tx, owners, vector, k)))[:k]

    def lexical(self, owner_ids: Sequence[int], query_text: str, k: int) -> list[tuple[int, float]]:
        """Top-k (note id, score; higher is better) among the given owners' active notes only, best first.

        Any of the question's content words matches; a question with none (only stopwords) finds nothing.
        """
        check_k(k)
        owners = owner_list(owner_ids)
        if not owners:
            return []
        return best_first(self._reading(owners, lambda tx: self._lexical_rows(tx, owners, query_text, k)))[:k]

    def owner_matrix(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(note ids int64, timestamps float64 epoch s, embeddings (n, 384) float32) of active notes, chronological."""
        owners = owner_list(owner_ids)
        d = self.dialect
        rows = self._reading(
            owners,
            lambda tx: tx.rows(
                f"SELECT id, timestamp, embedding FROM notes WHERE {d.ids('owner_id')} AND archived_at IS NULL "
                "ORDER BY timestamp, id",
                (d.bind_ids(owners),),
            ),
        )
        return pool_arrays(rows, self._matrix)

    def owner_version(self, owner_id: int) -> int:
        row = self._reading(
            ALL, lambda tx: tx.one("SELECT version FROM owner_versions WHERE owner_id = ?", (owner_id,))
        )
        return int(row[0]) if row else 0
