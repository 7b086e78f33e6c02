"""Several templates per person from many good frames: pose-diverse groups, each fused with quality weights.

Measured in bench/bench_video_enrolment.py (results/video_enrolment.md) and not shipped: at equal FAR it does not
beat the kiosk's own rule (every accepted sample a template), and at the shipped thresholds it raises FAR.

A short enrolment video gives far more frames than templates worth keeping. Frames of one pose are near
duplicates, so the frames are grouped by their embeddings (spherical k-means seeded by farthest points: one group
per pose the person showed) and each group becomes one template, the quality-weighted mean of its frames, as a
fused probe is the mean of its frames. A group's mean sits nearer the person's true face for that pose than any
one frame, and few templates keep the gate's max over templates from picking up an impostor's lucky frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from kiosk.identity.quality import MEASURE_SIZE, MIN_SHARPNESS, QualityVerdict

TEMPLATES_PER_PERSON = 3
KMEANS_ROUNDS = 10
# A frame counts fully once it is this many times the quality gates' minimum: sharper or bigger adds nothing.
FULL_SHARPNESS = 4 * MIN_SHARPNESS
FULL_SIZE_FACTOR = 2.0
MIN_WEIGHT = 0.05  # a frame that passed the gates still counts a little


def quality_weight(
    sharpness: float, size_px: float, turn: float, detector_score: float = 1.0, min_face_px: int = 60
) -> float:
    """How much one frame counts in a fused vector: sharpness, face size, frontality and detector score, each
    saturating at "clearly good" (0 .. 1)."""
    sharp = min(1.0, max(0.0, sharpness) / FULL_SHARPNESS)
    size = min(1.0, max(0.0, size_px) / (FULL_SIZE_FACTOR * min_face_px))
    frontal = 1.0 - min(1.0, max(0.0, turn))
    detector = min(1.0, max(0.0, detector_score))
    return max(MIN_WEIGHT, sharp * size * frontal * detector)


def verdict_weight(verdict: QualityVerdict, detector_score: float = 1.0, min_face_px: int = 60) -> float:
    """`quality_weight` of a face the quality gates judged."""
    return quality_weight(verdict.sharpness, verdict.size_px, verdict.turn, detector_score, min_face_px)


def weighted_mean(vectors: np.ndarray, weights: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """The unit-length weighted mean of unit row vectors (plain mean without weights)."""
    rows = np.asarray(vectors, dtype=np.float64)
    w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(rows) == 0 or len(w) != len(rows) or not np.all(w >= 0) or w.sum() <= 0:
        raise ValueError("weighted_mean needs as many non-negative weights as vectors, not all zero")
    mean = (w[:, None] * rows).sum(axis=0)
    return (mean / np.linalg.norm(mean)).astype(np.float32)


def pose_groups(vectors: np.ndarray, count: int) -> list[list[int]]:
    """At most `count` groups of row indices of similar unit vectors (deterministic spherical k-means, seeded by
    the medoid and then each time the vector farthest from every seed so far)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if len(rows) <= count:
        return [[i] for i in range(len(rows))]
    similarities = rows @ rows.T
    seeds = [int(np.argmax(similarities.sum(axis=1)))]
    while len(seeds) < count:
        seeds.append(int(np.argmin(similarities[:, seeds].max(axis=1))))
    centres = rows[seeds]
    labels = np.full(len(rows), -1)
    for _ in range(KMEANS_ROUNDS):
        new_labels = np.argmax(rows @ centres.T, axis=1)
        if np.array_equal(new_labels, labels):
            break
        labels = new_labels
        for group in range(count):
            members = rows[labels == group]
            if len(members):  # an emptied group keeps its centre
                centres[group] = members.sum(axis=0) / np.linalg.norm(members.sum(axis=0))
    return [members for group in range(count) if (members := np.flatnonzero(labels == group).tolist())]


def diverse_templates(
    vectors: np.ndarray, weights: Sequence[float] | np.ndarray | None = None, count: int = TEMPLATES_PER_PERSON
) -> np.ndarray:
    """(<= count, d) float32 templates: the quality-weighted mean of each pose group of the frames' vectors."""
    rows = np.asarray(vectors, dtype=np.float32)
    w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
    groups = pose_groups(rows, count)
    return np.stack([weighted_mean(rows[group], w[group]) for group in groups]).astype(np.float32)


def crop_sharpness(image: np.ndarray) -> float:
    """Laplacian variance of a tight face crop (BGR or gray) at MEASURE_SIZE, the scale quality.assess measures at."""
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    resized = cv2.resize(gray, (MEASURE_SIZE, MEASURE_SIZE), interpolation=cv2.INTER_AREA)
    return float(cv2.Laplacian(resized, cv2.CV_64F).var())
