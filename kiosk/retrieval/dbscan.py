"""DBSCAN on a few dozen candidate vectors (cosine distance), numpy only, deterministic.

eps is not a fixed number: cosine distances between MiniLM candidates move with the question, so eps is
taken per call as a quantile of the points' distances to their `min_samples`-th nearest neighbour. Points
in no dense region are noise (label -1) and do not pull any centroid.
"""

from __future__ import annotations

import numpy as np

NOISE = -1


def cosine_distances(points: np.ndarray) -> np.ndarray:
    data = np.asarray(points, dtype=np.float64)
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    unit = data / np.where(norms > 0, norms, 1.0)
    return np.clip(1.0 - unit @ unit.T, 0.0, 2.0)


def kth_neighbour_distances(distances: np.ndarray, k: int) -> np.ndarray:
    """Each point's distance to its k-th nearest other point (k clipped to n - 1)."""
    n = distances.shape[0]
    if n < 2:
        return np.zeros(n)
    k = max(1, min(k, n - 1))
    # Column 0 of the sorted row is the point itself (distance 0).
    return np.sort(distances, axis=1)[:, k]


def dbscan(points: np.ndarray, *, min_samples: int = 3, eps_quantile: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Cluster `points` (n, d); returns (labels (n,) int64 with NOISE = -1, centroids (c, d) float64).

    A point is core when at least `min_samples` points (itself included) lie within eps; clusters are the
    core points connected through eps-neighbourhoods plus the border points they reach. Visiting order is
    by index, so the same input always gives the same labels.
    """
    data = np.asarray(points, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError("dbscan needs a non-empty (n, d) array")
    if min_samples < 1:
        raise ValueError(f"min_samples must be at least 1, got {min_samples}")
    if not 0.0 < eps_quantile <= 1.0:
        raise ValueError(f"eps_quantile must be in (0, 1], got {eps_quantile}")
    n = data.shape[0]
    distances = cosine_distances(data)
    eps = float(np.quantile(kth_neighbour_distances(distances, min_samples - 1), eps_quantile)) if n > 1 else 0.0
    neighbours = distances <= eps + 1e-12
    core = neighbours.sum(axis=1) >= min_samples
    labels = np.full(n, NOISE, dtype=np.int64)
    cluster = 0
    for start in range(n):
        if not core[start] or labels[start] != NOISE:
            continue
        labels[start] = cluster
        frontier = [start]
        while frontier:
            point = frontier.pop()
            if not core[point]:
                continue
            for other in np.flatnonzero(neighbours[point]):
                if labels[other] == NOISE:
                    labels[other] = cluster
                    frontier.append(int(other))
        cluster += 1
    centroids = np.stack([data[labels == c].mean(axis=0) for c in range(cluster)]) if cluster else data[:0]
    return labels, centroids


def density_spread(points: np.ndarray, k: int = 3) -> float:
    """How uneven the density is: coefficient of variation of the k-th-neighbour cosine distances."""
    distances = cosine_distances(points)
    kth = kth_neighbour_distances(distances, k)
    mean = float(kth.mean()) if kth.size else 0.0
    return float(kth.std() / mean) if mean > 0 else 0.0
