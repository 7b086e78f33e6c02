"""A small deterministic k-means (k-means++ seeding, Lloyd iterations) for a few dozen candidate vectors."""

from __future__ import annotations

import numpy as np


def kmeans(points: np.ndarray, clusters: int, *, seed: int = 0, iterations: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Cluster `points` (n, d) into at most `clusters` groups.

    Returns (labels (n,) int64, centroids (c, d) float64) with c = min(clusters, distinct points);
    the same input and seed always give the same result.
    """
    data = np.asarray(points, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError("kmeans needs a non-empty (n, d) array")
    count = min(clusters, len({row.tobytes() for row in data}))
    if count <= 1:
        return np.zeros(data.shape[0], dtype=np.int64), data.mean(axis=0, keepdims=True)
    rng = np.random.default_rng(seed)
    centroids = _plus_plus(data, count, rng)
    count = centroids.shape[0]
    labels = np.zeros(data.shape[0], dtype=np.int64)
    for step in range(iterations):
        distances = _squared_distances(data, centroids)
        new_labels = distances.argmin(axis=1)
        if step > 0 and np.array_equal(new_labels, labels):
            break
        labels = new_labels
        for c in range(count):
            members = data[labels == c]
            if len(members):
                centroids[c] = members.mean(axis=0)
            else:
                # An emptied cluster takes the point farthest from its centroid, so c groups remain.
                far = int(distances.min(axis=1).argmax())
                centroids[c] = data[far]
    labels = _squared_distances(data, centroids).argmin(axis=1)
    return labels.astype(np.int64), centroids


def _squared_distances(data: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return (data * data).sum(axis=1)[:, None] - 2.0 * data @ centroids.T + (centroids * centroids).sum(axis=1)[None, :]


def _plus_plus(data: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    centroids = [data[int(rng.integers(data.shape[0]))]]
    for _ in range(1, count):
        nearest = np.clip(_squared_distances(data, np.stack(centroids)).min(axis=1), 0.0, None)
        total = float(nearest.sum())
        if total <= 0.0:
            break
        centroids.append(data[int(rng.choice(data.shape[0], p=nearest / total))])
    return np.stack(centroids).copy()
