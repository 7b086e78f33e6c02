"""Shift- and rotation-tolerant palm probes: the re-alignment grid, fusing the variants of several frames, and on
real Tongji ROIs that a second-session shift the plain cosine refuses passes the gate with the search, at the
shipped palm tau."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.identity.gate import GateRule, gate
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder
from kiosk.identity.palm_alignment import (
    SHIPPED_SEARCH,
    AlignedVectors,
    AlignmentSearch,
    fuse_aligned,
    realigned_rois,
)
from kiosk.identity.probe import Probe
from kiosk.memory.note import Template
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


def test_fusing_frames_averages_each_variant_across_frames() -> None:
    first = AlignedVectors(np.array([1.0, 0.0], np.float32), np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))
    second = AlignedVectors(np.array([0.0, 1.0], np.float32), np.array([[0.0, 1.0], [0.0, 1.0]], np.float32))
    fused = fuse_aligned([first, second])
    half = np.sqrt(0.5)
    np.testing.assert_allclose(fused.vector, [half, half], rtol=1e-6)
    assert fused.variants is not None
    np.testing.assert_allclose(fused.variants, [[half, half], [0.0, 1.0]], rtol=1e-6)
    assert fuse_aligned([first, AlignedVectors(second.vector)]).variants is None  # one frame without: none


@pytest.fixture(scope="module")
def embedder(base_config: KioskConfig) -> PalmEmbedder:
    return load_palm_embedder(base_config)


def test_the_setting_switches_the_probe_variants(base_config: KioskConfig) -> None:
    config = base_config.model_copy(deep=True)
    config.palm.alignment_search = False
    plain = load_palm_embedder(config)
    searched = load_palm_embedder(base_config)
    assert base_config.palm.alignment_search and searched.alignment == SHIPPED_SEARCH and plain.alignment is None
    roi = textured_roi(3)
    with_search, without = searched.encode_probe_roi(roi), plain.encode_probe_roi(roi)
    assert without.variants is None
    assert with_search.variants is not None and with_search.variants.shape == (26, searched.dimension)
    np.testing.assert_allclose(with_search.vector, without.vector, atol=1e-5)


def shipped_palm_tau(config: KioskConfig) -> float:
    path = config.paths.calibration_dir / config.gate.palm_calibration
    calibration = json.loads(path.read_text())
    assert calibration["alignment_search"] is True, f"{path} was not made with the search"
    return float(calibration["threshold"])


@pytest.mark.real_data
def test_a_second_session_shift_is_refused_without_the_search_and_accepted_with_it(
    embedder: PalmEmbedder, base_config: KioskConfig, data_dir: Path
) -> None:
    tau = shipped_palm_tau(base_config)
    now = datetime.now(UTC)
    enrolled = embedder.embed_rois([read_palm(data_dir, palm, 1) for palm in (52, 60, 77)])
    templates = [
        Template(index, user, "palm", vector, embedder.model_sha256, now)
        for index, (user, vector) in enumerate(zip((52, 60, 77), enrolled, strict=True))
    ]
    side = read_palm(data_dir, 52, 2).shape[1]
    step = 6 * side / 128  # 6 px of the 128 px ROI, in the scan's pixels
    moved = shifted(read_palm(data_dir, 52, 2), step, step, 6.0)
    vectors = embedder.probe_vectors(moved, roi=True)
    assert vectors.variants is not None
    plain = Probe("palm", vectors.vector, embedder.model_sha256, captured_at=0.0)
    searched = Probe("palm", vectors.vector, embedder.model_sha256, captured_at=0.0, variants=vectors.variants)
    without, with_search = gate(plain, templates, GateRule(tau)), gate(searched, templates, GateRule(tau))
    assert without.matched_owner_ids == (), without.scores
    assert with_search.matched_owner_ids == (52,), with_search.scores
