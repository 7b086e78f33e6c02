"""Recollection clustering: DBSCAN (numpy), the adaptive choice, and recollection running with each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kiosk.config import RetrievalConfig, load_config
from kiosk.errors import ConfigError
from kiosk.memory import SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever
from kiosk.retrieval.clustering import ClusteringSettings, cluster
from kiosk.retrieval.dbscan import NOISE, dbscan, density_spread

from .test_retriever import add, unit


def uneven(seed: int = 0, dim: int = 32) -> np.ndarray:
    """Eight near-duplicates around one direction plus six scattered stragglers."""
    rng = np.random.default_rng(seed)
    centre = unit(rng.standard_normal(dim))
    tight = centre + 0.05 * rng.standard_normal((8, dim))
    return np.vstack([tight, rng.standard_normal((6, dim))])


def test_dbscan_keeps_the_dense_group_and_leaves_stragglers_out() -> None:
    points = uneven()
    labels, centroids = dbscan(points, min_samples=3, eps_quantile=0.5)
    assert set(labels[:8].tolist()) == {0} and set(labels[8:].tolist()) == {NOISE}
    assert centroids.shape == (1, 32)
    np.testing.assert_allclose(centroids[0], points[:8].mean(axis=0))
    again, _ = dbscan(points, min_samples=3, eps_quantile=0.5)
    assert np.array_equal(labels, again)


def test_dbscan_finds_two_separate_groups() -> None:
    rng = np.random.default_rng(3)
    a, b = unit(rng.standard_normal(32)), unit(rng.standard_normal(32))
    points = np.vstack([a + 0.05 * rng.standard_normal((6, 32)), b + 0.05 * rng.standard_normal((6, 32))])
    labels, centroids = dbscan(points, min_samples=3, eps_quantile=0.9)
    assert centroids.shape[0] == 2
    assert len(set(labels[:6].tolist())) == 1 and len(set(labels[6:].tolist())) == 1 and labels[0] != labels[6]


def test_dbscan_bad_input() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        dbscan(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="min_samples"):
        dbscan(np.ones((3, 4)), min_samples=0)
    with pytest.raises(ValueError, match="eps_quantile"):
        dbscan(np.ones((3, 4)), eps_quantile=0.0)


def test_adaptive_picks_dbscan_only_for_uneven_density() -> None:
    rng = np.random.default_rng(4)
    even = rng.standard_normal((14, 32))
    assert density_spread(uneven()) > 0.25 > density_spread(even)
    settings = ClusteringSettings("adaptive", density_threshold=0.25)
    assert cluster(uneven(), 2, settings)[2] == "dbscan"
    assert cluster(even, 2, settings)[2] == "kmeans"
    assert cluster(even, 2, ClusteringSettings("kmeans"))[2] == "kmeans"
    with pytest.raises(ValueError, match="unknown clustering method"):
        cluster(even, 2, ClusteringSettings("spectral"))  # type: ignore[arg-type]


def test_dbscan_without_a_dense_group_falls_back_to_kmeans() -> None:
    two = np.eye(2, 8)  # fewer points than min_samples: no core point possible
    _labels, centroids, method = cluster(two, 2, ClusteringSettings("dbscan", min_samples=3))
    assert method == "kmeans" and centroids.shape[0] == 2


@pytest.mark.parametrize("method", ["kmeans", "dbscan", "adaptive"])
def test_recollection_runs_with_each_method_on_the_real_store(method: str) -> None:
    rng = np.random.default_rng(5)
    with SqliteStore(":memory:") as store:
        owner = store.add_user("a").id
        centre = unit(rng.standard_normal(EMBEDDING_DIM))
        for day in range(15):
            add(store, owner, unit(centre + 0.2 * unit(rng.standard_normal(EMBEDDING_DIM))), day)
        for day in range(15, 40):
            add(store, owner, unit(rng.standard_normal(EMBEDDING_DIM)), day)
        config = RetrievalConfig(mode="recollection", clustering=method)  # type: ignore[arg-type]
        result = Retriever(store, config).retrieve([owner], unit(centre + 0.5 * unit(rng.standard_normal(384))), "q")
        assert len(result.notes) == 10 and result.rounds >= 1
        assert sum(result.clusterings.values()) >= 1
        if method == "kmeans":
            assert set(result.clusterings) == {"kmeans"}


def test_clustering_typo_in_config_is_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "kiosk.toml"
    empty.write_text("")
    with pytest.raises(ConfigError, match=r"retrieval\.clustering"):
        load_config(empty, environ={"KIOSK_RETRIEVAL__CLUSTERING": "dbscann"})
