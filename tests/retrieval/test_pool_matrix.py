"""The in-memory pool search: exact cosine, ties broken by note id."""

from __future__ import annotations

import numpy as np
import pytest

from kiosk.retrieval.pool_matrix import PoolMatrix


def test_pool_search_orders_ties_by_id() -> None:
    pool = PoolMatrix(np.array([9, 3, 5]), np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    ids, sims, _ = pool.search(np.array([1.0, 0.0]), 3)
    assert ids.tolist() == [3, 9, 5] and sims[0] == pytest.approx(1.0)
