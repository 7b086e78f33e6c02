"""How recollection groups a beam query's candidates: k-means, DBSCAN, or chosen per candidate set.

k-means always makes B groups, each pulling a centroid, outliers included. When the candidates are
unevenly dense (a tight group of near-duplicates plus scattered singletons), DBSCAN keeps the dense
groups and leaves the stragglers out (the RF-Mem seed's adaptive choice). "adaptive" measures the spread
of k-th-neighbour distances and runs DBSCAN above `density_threshold`, k-means below it; DBSCAN that finds
no dense group at all falls back to k-means. bench/results/clustering.md measures all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from kiosk.retrieval.dbscan import dbscan, density_spread
from kiosk.retrieval.kmeans import kmeans

Method = Literal["kmeans", "dbscan", "adaptive"]
METHODS: tuple[Method, ...] = ("kmeans", "dbscan", "adaptive")


@dataclass(frozen=True)
class ClusteringSettings:
    method: Method = "kmeans"
    min_samples: int = 3
    eps_quantile: float = 0.5
    density_threshold: float = 0.25


def cluster(
    points: np.ndarray, clusters: int, settings: ClusteringSettings, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, str]:
    """(labels, centroids, method used); labels of points in no group are -1 (DBSCAN noise)."""
    if settings.method not in METHODS:
        raise ValueError(f"unknown clustering method {settings.method!r}; use one of {METHODS}")
    use_dbscan = settings.method == "dbscan" or (
        settings.method == "adaptive" and density_spread(points, settings.min_samples) > settings.density_threshold
    )
    if use_dbscan and points.shape[0] >= settings.min_samples:
        labels, centroids = dbscan(points, min_samples=settings.min_samples, eps_quantile=settings.eps_quantile)
        if centroids.shape[0] > 0:
            return labels, centroids, "dbscan"
    labels, centroids = kmeans(points, clusters, seed=seed)
    return labels, centroids, "kmeans"
