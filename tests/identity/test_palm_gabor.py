"""The Gabor competitive-code graph: deterministic bytes, and ONNX == numpy/OpenCV reference."""

from __future__ import annotations

import csv
import hashlib
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.identity.gabor import GaborCodeParams, build_onnx, gabor_bank, reference_encode
from kiosk.identity.palm_roi import normalise_roi
from kiosk.runtime import load_encoder


def test_bank_is_zero_mean_and_oriented() -> None:
    params = GaborCodeParams()
    bank = gabor_bank(params)[:, 0]
    assert bank.shape == (params.orientations, params.kernel_size, params.kernel_size)
    assert np.abs(bank.sum(axis=(1, 2))).max() < 1e-5  # no response to flat illumination
    # The filter at 90 degrees is the 0-degree filter transposed.
    np.testing.assert_allclose(bank[params.orientations // 2], bank[0].T, atol=1e-6)


def test_graph_bytes_are_deterministic_and_keyed_by_parameters() -> None:
    params = GaborCodeParams()
    first, second = build_onnx(params), build_onnx(params)
    assert hashlib.sha256(first).hexdigest() == hashlib.sha256(second).hexdigest()
    other = replace(params, orientations=8)
    assert other.key() != params.key()
    assert build_onnx(other) != first


def tongji_rois(data_dir: Path, count: int) -> np.ndarray:
    manifest = data_dir / "palm_tongji_palmnet" / "manifest.csv"
    rows = list(csv.DictReader(manifest.open()))[:: max(1, 907 // count)][:count]
    rois = []
    for row in rows:
        image = cv2.imread(str(manifest.parent / row["path"]), cv2.IMREAD_GRAYSCALE)
        assert image is not None, row["path"]
        rois.append(normalise_roi(cv2.resize(image, (128, 128), interpolation=cv2.INTER_AREA)))
    return np.stack(rois)


@pytest.mark.real_data
@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_onnx_graph_matches_numpy_reference_on_real_palms(data_dir: Path, backend: str) -> None:
    params = GaborCodeParams()
    rois = tongji_rois(data_dir, 12)
    encoder = load_encoder(build_onnx(params), backend=backend, precision="f32")  # type: ignore[arg-type]
    graph = encoder.run({"roi": rois[:, None].astype(np.float32)})["embedding"]
    reference = np.stack([reference_encode(roi, params) for roi in rois])
    assert graph.shape == reference.shape == (12, params.dimension)
    np.testing.assert_allclose(np.linalg.norm(graph, axis=1), 1.0, atol=1e-4)
    cosines = (graph * reference).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_reference_rejects_wrong_roi_size() -> None:
    with pytest.raises(ValueError, match="128x128"):
        reference_encode(np.zeros((100, 100), np.uint8), GaborCodeParams())
