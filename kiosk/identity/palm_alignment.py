"""Shift- and rotation-tolerant palm probes: the probe ROI re-sampled at small re-alignments, each one encoded.

Two ROIs of one palm taken in different sessions are offset by a few pixels and degrees (the hand lies
differently, the landmarks wobble). CompCode/BOCV matchers answer with the best score over small translations;
here the probe ROI is re-sampled on a small grid of shifts and rotations and every variant is encoded. The gate
scores a template as the largest cosine over the probe's vector and its variants (kiosk.identity.gate); templates
stay one vector per enrolment image. The search raises impostor scores too, so it has its own calibration
(`alignment_search` in the calibration file; bench/results/palm_transfer.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np


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


SHIPPED_SEARCH = AlignmentSearch()
"""The grid `palm.alignment_search` turns on: 27 variants, chosen on Tongji palms 1-50."""


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


@dataclass(frozen=True)
class AlignedVectors:
    """One palm ROI encoded: its own vector and, with the search on, its re-alignments' vectors."""

    vector: np.ndarray  # (D,) unit
    variants: np.ndarray | None = None  # (V, D) unit rows, or None without the search


def fuse_aligned(frames: Sequence[AlignedVectors]) -> AlignedVectors:
    """Several frames of one palm as one probe: the normalised mean of the vectors, and of each re-alignment
    across frames (variant k of the fused probe is the fused frames moved by offset k). Variants are kept only
    when every frame has them."""
    if not frames:
        raise ValueError("no frames to fuse")
    vector = _unit(np.mean([frame.vector for frame in frames], axis=0))
    stacks = [frame.variants for frame in frames]
    if any(variants is None for variants in stacks):
        return AlignedVectors(vector)
    variants = _unit(np.mean(np.stack(stacks), axis=0))  # type: ignore[arg-type]
    return AlignedVectors(vector, variants)


def _unit(values: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(values, axis=-1, keepdims=True)
    return (values / np.maximum(norms, 1e-12)).astype(np.float32)
