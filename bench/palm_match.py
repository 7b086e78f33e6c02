"""Shift- and rotation-tolerant palm matching: the best cosine over small re-alignments of the probe ROI.

Two ROIs of one palm taken in different sessions are offset by a few pixels and degrees (the hand lies
differently, the landmarks wobble). CompCode/BOCV matchers answer with the best score over small translations;
here the probe ROI is re-sampled on a small grid of shifts and rotations, every variant is encoded, and a
template's score is the largest cosine over the variants. Templates stay one vector per enrolment image.

The search raises impostor scores too, so it needs its own threshold (bench/results/palm_transfer.md). It lives in
bench/ until the probe can carry the variants to the gate (a probe is one vector today).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from kiosk.identity.palm_encoders import RoiEncoder


@dataclass(frozen=True)
class AlignmentSearch:
    """The re-alignment grid: every combination of {-s, 0, s} px in x and y and {-r, 0, r} degrees."""

    shift_px: float = 4.0
    rotation_deg: float = 4.0

    def offsets(self) -> list[tuple[float, float, float]]:
        """(degrees, dx, dy) per variant; the unchanged ROI comes first."""
        angles = _steps(self.rotation_deg)
        shifts = _steps(self.shift_px)
        return [(angle, dx, dy) for angle in angles for dx in shifts for dy in shifts]


def _steps(limit: float) -> list[float]:
    return [0.0] if limit == 0 else [0.0, -limit, limit]


def realigned_rois(roi: np.ndarray, search: AlignmentSearch) -> np.ndarray:
    """(V, S, S) uint8: the ROI rotated about its centre and shifted by each of the search's offsets."""
    side_y, side_x = roi.shape
    centre = (side_x / 2.0, side_y / 2.0)
    variants = []
    for angle, dx, dy in search.offsets():
        if angle == 0 and dx == 0 and dy == 0:
            variants.append(roi)
            continue
        matrix = cv2.getRotationMatrix2D(centre, angle, 1.0)
        matrix[:, 2] += np.array([dx, dy])
        # Reflected borders keep palm-like texture at the edges instead of a flat band the code would read as lines.
        variants.append(
            cv2.warpAffine(roi, matrix, (side_x, side_y), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101)
        )
    return np.stack(variants)


def encode_realigned(encoder: RoiEncoder, roi: np.ndarray, search: AlignmentSearch) -> np.ndarray:
    """(V, D) unit vectors of one normalised probe ROI's re-alignments."""
    return encoder.encode(realigned_rois(roi, search))


def best_alignment_scores(variant_vectors: np.ndarray, templates: np.ndarray) -> np.ndarray:
    """(N,) per template: the largest cosine over the probe's variants (all inputs unit vectors)."""
    if variant_vectors.ndim != 2 or templates.ndim != 2 or variant_vectors.shape[1] != templates.shape[1]:
        raise ValueError(f"shapes {variant_vectors.shape} and {templates.shape} are not (V, D) and (N, D)")
    if len(templates) == 0:
        return np.empty(0, dtype=np.float32)
    return np.asarray((templates @ variant_vectors.T).max(axis=1), dtype=np.float32)
