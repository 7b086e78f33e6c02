"""k-means, the familiarity signal, the path choice, recollection and the versioned cache."""

from __future__ import annotations

import numpy as np
import pytest

from kiosk.retrieval.adaptive import choose_path, familiarity_signal, mixing_alpha
from kiosk.retrieval.cache import VersionedCache
from kiosk.retrieval.kmeans import kmeans
from kiosk.retrieval.recollection import PoolMatrix, RecollectionSettings, fuse, recollect
from kiosk.retrieval.results import FamiliaritySignal
from kiosk.retrieval.tuning import RetrievalTuning


def blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[5.0, 0.0], [0.0, 5.0], [-5.0, -5.0]])
    truth = np.repeat(np.arange(3), 10)
    return centres[truth] + 0.3 * rng.standard_normal((30, 2)), truth


def test_kmeans_recovers_separated_blobs_deterministically() -> None:
    points, truth = blobs()
    labels, centroids = kmeans(points, 3, seed=1)
    again, _ = kmeans(points, 3, seed=1)
    assert np.array_equal(labels, again)
    assert centroids.shape == (3, 2)
    for group in range(3):  # each true blob lands in exactly one cluster
        assert len(set(labels[truth == group].tolist())) == 1
    assert len(set(labels.tolist())) == 3


def test_kmeans_with_fewer_distinct_points_than_clusters() -> None:
    points = np.ones((5, 4))
    labels, centroids = kmeans(points, 3)
    assert labels.tolist() == [0] * 5 and centroids.shape == (1, 4)


def test_alpha_schedule() -> None:
    assert mixing_alpha(10) == pytest.approx(0.4)
    assert mixing_alpha(50) == pytest.approx(0.8)
    assert mixing_alpha(500) == pytest.approx(0.8)


def test_signal_peaked_vs_flat() -> None:
    peaked = familiarity_signal([0.9] + [0.2] * 14, 15, 10.0)
    flat = familiarity_signal([0.4] * 15, 15, 10.0)
    assert flat.entropy == pytest.approx(np.log(15))
    z = 1 + 14 * np.exp(-7.0)
    p_top, p_rest = 1 / z, np.exp(-7.0) / z
    assert peaked.entropy == pytest.approx(-(p_top * np.log(p_top) + 14 * p_rest * np.log(p_rest)))
    assert peaked.mean_similarity == pytest.approx((0.9 + 0.2 * 14) / 15)
    assert familiarity_signal([], 15, 10.0).probed == 0


def test_path_choice_follows_the_seed_rules() -> None:
    tuning = RetrievalTuning(theta_high=0.75, theta_low=0.35, tau_entropy=1.35)
    assert choose_path(FamiliaritySignal(0.8, 2.5, 15), tuning) == "familiarity"  # confident mean
    assert choose_path(FamiliaritySignal(0.3, 0.1, 15), tuning) == "recollection"  # weak mean
    assert choose_path(FamiliaritySignal(0.5, 1.0, 15), tuning) == "familiarity"  # peaked
    assert choose_path(FamiliaritySignal(0.5, 2.0, 15), tuning) == "recollection"  # dispersed


def _two_facet_pool() -> tuple[PoolMatrix, np.ndarray, set[int], set[int]]:
    """A question touching two facets: facet A is closer to it, facet B is relevant but ranks below A."""
    rng = np.random.default_rng(3)
    dim = 64
    a, b = np.eye(dim)[0], np.eye(dim)[1]
    question = 0.75 * a + 0.6 * b
    rows = [a + 0.03 * rng.standard_normal(dim) for _ in range(8)]
    rows += [b + 0.03 * rng.standard_normal(dim) for _ in range(8)]
    rows += [rng.standard_normal(dim) for _ in range(40)]  # unrelated notes
    ids = np.arange(100, 100 + len(rows))
    return PoolMatrix(ids, np.stack(rows)), question, set(ids[:8].tolist()), set(ids[8:16].tolist())


def test_recollection_is_deterministic_and_deduplicated() -> None:
    pool, question, _, _ = _two_facet_pool()
    settings = RecollectionSettings(k=6, candidates=10)
    first = recollect(pool.search, question, settings)
    second = recollect(pool.search, question, settings)
    assert first == second
    assert len(first.ids) == len(set(first.ids)) == 6
    assert first.ids[:3] == pool.search(question, 3)[0].tolist()  # the question's own best come first
    assert 1 <= first.rounds <= settings.rounds


def test_recollection_brings_in_the_second_facet_that_one_shot_misses() -> None:
    pool, question, facet_a, facet_b = _two_facet_pool()
    one_shot = set(pool.search(question, 8)[0].tolist())
    assert one_shot == facet_a
    found = recollect(pool.search, question, RecollectionSettings(k=8, candidates=12, alpha=0.4))
    assert len(set(found.ids) & facet_b) >= 2
    assert set(found.ids) <= facet_a | facet_b
    assert found.queries > 1


def test_fuse_keeps_question_half_then_round_robin_without_duplicates() -> None:
    origin = [1, 2, 3, 4, 5, 6]
    expansions = [[2, 10, 11], [20, 10, 21]]
    assert fuse(origin, expansions, 6) == [1, 2, 3, 20, 10, 11]
    assert fuse(origin, [], 4) == [1, 2, 3, 4]
    assert fuse([1], [[1], [2]], 5) == [1, 2]


def test_pool_search_orders_ties_by_id() -> None:
    pool = PoolMatrix(np.array([9, 3, 5]), np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    ids, sims, _ = pool.search(np.array([1.0, 0.0]), 3)
    assert ids.tolist() == [3, 9, 5] and sims[0] == pytest.approx(1.0)


def test_cache_expires_by_time_and_by_owner_version() -> None:
    now = [0.0]
    cache: VersionedCache[str] = VersionedCache(0.35, clock=lambda: now[0])
    versions = ((1, 4),)
    cache.put("key", versions, "value")
    assert cache.get("key", versions) == "value"
    assert cache.get("key", ((1, 5),)) is None  # a write to owner 1 invalidates
    cache.put("key", versions, "value")
    now[0] = 0.36
    assert cache.get("key", versions) is None  # older than the TTL
    disabled: VersionedCache[str] = VersionedCache(0.0)
    disabled.put("key", versions, "value")
    assert disabled.get("key", versions) is None
