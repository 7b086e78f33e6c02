"""Synthetic Face Mesh landmarks for liveness tests: eyes of a chosen openness, the nose at a chosen yaw."""

from __future__ import annotations

import numpy as np

from kiosk.identity.challenge import ChallengeSample
from kiosk.identity.facemesh import (
    CHEEK_IMAGE_LEFT,
    CHEEK_IMAGE_RIGHT,
    LEFT_EYE,
    NOSE_TIP,
    POINTS,
    RIGHT_EYE,
    eye_aspect_ratio,
    head_yaw,
)


def mesh(openness: float, yaw: float) -> np.ndarray:
    """468 synthetic landmarks with eyes of the given aspect ratio and the nose at the given yaw."""
    points = np.zeros((POINTS, 3), np.float32)
    for eye, centre_x in ((RIGHT_EYE, 170.0), (LEFT_EYE, 230.0)):
        half_gap = openness * 20.0 / 2  # eye width 20 px: aspect ratio = gap / width
        corner_a, top_1, top_2, corner_b, bottom_2, bottom_1 = eye
        points[corner_a, :2] = (centre_x - 10, 200)
        points[corner_b, :2] = (centre_x + 10, 200)
        points[top_1, :2] = (centre_x - 4, 200 - half_gap)
        points[top_2, :2] = (centre_x + 4, 200 - half_gap)
        points[bottom_2, :2] = (centre_x + 4, 200 + half_gap)
        points[bottom_1, :2] = (centre_x - 4, 200 + half_gap)
    points[CHEEK_IMAGE_LEFT, :2] = (140, 230)
    points[CHEEK_IMAGE_RIGHT, :2] = (260, 230)
    points[NOSE_TIP, :2] = (200 + yaw * 60, 235)
    return points


def samples(sequence: list[tuple[float, float]], fps: float = 10.0, start: float = 0.0) -> list[ChallengeSample]:
    """Challenge samples measured on synthetic meshes, one per (eye openness, yaw) frame at `fps`."""
    out = []
    for index, (openness, yaw) in enumerate(sequence):
        points = mesh(openness, yaw)
        out.append(ChallengeSample(start + index / fps, eye_aspect_ratio(points), head_yaw(points)))
    return out
