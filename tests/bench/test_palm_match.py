"""The shift- and rotation-tolerant palm matcher: its re-alignment grid, its max-over-variants score, and on
real Tongji ROIs that it forgives a second-session shift the plain cosine does not."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bench.palm_match import AlignmentSearch, best_alignment_scores, encode_realigned, realigned_rois
from kiosk.config import KioskConfig
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder
from kiosk.identity.palm_roi import prepare_roi
from tests.identity.test_palm_embedder import read_palm


def textured_roi(seed: int = 0) -> np.ndarray:
    noise = np.random.default_rng(seed).uniform(0, 255, (128, 128)).astype(np.float32)
    return np.asarray(np.clip(cv2.GaussianBlur(noise, (0, 0), 2.0) * 3 - 255, 0, 255), dtype=np.uint8)


def shifted(roi: np.ndarray, dx: float, dy: float, degrees: float = 0.0) -> np.ndarray:
    matrix = cv2.getRotationMatrix2D((roi.shape[1] / 2, roi.shape[0] / 2), degrees, 1.0)
    matrix[:, 2] += np.array([dx, dy])
    return cv2.warpAffine(
        roi, matrix, (roi.shape[1], roi.shape[0]), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
    )


def test_grid_has_every_combination_with_the_unchanged_roi_first() -> None:
    offsets = AlignmentSearch(shift_px=3.0, rotation_deg=5.0).offsets()
    assert offsets[0] == (0.0, 0.0, 0.0)
    assert len(offsets) == len(set(offsets)) == 27
    assert {angle for angle, _, _ in offsets} == {-5.0, 0.0, 5.0}
    assert {dx for _, dx, _ in offsets} == {dy for _, _, dy in offsets} == {-3.0, 0.0, 3.0}
    assert AlignmentSearch(0.0, 0.0).offsets() == [(0.0, 0.0, 0.0)]
    assert len(AlignmentSearch(4.0, 0.0).offsets()) == 9


def test_one_variant_undoes_a_shift_of_the_grid_step() -> None:
    roi = textured_roi()
    moved = shifted(roi, 4, -4)
    variants = realigned_rois(moved, AlignmentSearch(shift_px=4.0, rotation_deg=4.0))
    assert variants.shape == (27, 128, 128) and variants.dtype == np.uint8
    np.testing.assert_array_equal(variants[0], moved)
    inner = np.s_[8:-8, 8:-8]
    errors = [np.abs(variant[inner].astype(int) - roi[inner].astype(int)).mean() for variant in variants]
    assert min(errors) < 0.5 < errors[0]


def test_score_is_the_best_variant_per_template() -> None:
    variants = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)
    templates = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(best_alignment_scores(variants, templates), [0.8, 0.0, 1.0])
    assert best_alignment_scores(variants, np.empty((0, 3), dtype=np.float32)).shape == (0,)
    with pytest.raises(ValueError, match="not"):
        best_alignment_scores(variants, np.ones((2, 4), dtype=np.float32))


@pytest.fixture(scope="module")
def embedder(base_config: KioskConfig) -> PalmEmbedder:
    return load_palm_embedder(base_config)


@pytest.mark.real_data
def test_search_forgives_a_session_shift_that_costs_the_plain_cosine(embedder: PalmEmbedder, data_dir: Path) -> None:
    search = AlignmentSearch()
    enrolled = embedder.embed_rois([read_palm(data_dir, palm, 1) for palm in (52, 60, 77)])
    probe = prepare_roi(shifted(read_palm(data_dir, 52, 2), 4 * 150 / 128, 4 * 150 / 128, 4.0)).roi
    plain = enrolled @ embedder.encode_rois([probe])[0]
    searched = best_alignment_scores(encode_realigned(embedder.encoder, probe, search), enrolled)
    assert searched[0] > plain[0] + 0.05, (searched[0], plain[0])
    assert searched[0] > searched[1:].max() + 0.2, searched
