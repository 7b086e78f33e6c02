"""A palm scanner as a frame source (image folder, as a vendor SDK writes them) -> a fused palm Probe."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder
from kiosk.identity.palm_capture import open_palm_capture


@pytest.fixture(scope="module")
def embedder(base_config: KioskConfig) -> Iterator[PalmEmbedder]:
    palm = load_palm_embedder(base_config)
    yield palm
    palm.close()


def scanner_folder(data_dir: Path, tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "scanner"
    folder.mkdir()
    for name in names:
        source = data_dir / name
        shutil.copy(source, folder / source.name)
    return folder


def read(path: Path) -> np.ndarray:
    image = cv2.imread(str(path))
    assert image is not None, path
    return image


@pytest.mark.real_data
def test_roi_scanner_folder_gives_a_fused_probe(
    config: KioskConfig, embedder: PalmEmbedder, data_dir: Path, tmp_path: Path
) -> None:
    images = sorted((data_dir / "palm_tongji_palmnet" / "images").glob("0044_*.bmp"))
    folder = scanner_folder(data_dir, tmp_path, [str(p.relative_to(data_dir)) for p in images[:3]])
    config.capture.palm_source = str(folder)
    config.palm.roi_input = True
    capture = open_palm_capture(config, embedder)
    assert capture is not None
    capture.source.start()
    try:
        probe = capture.probe(timeout_s=10)
    finally:
        capture.source.stop()
    assert probe.modality == "palm" and probe.model_sha256 == embedder.model_sha256
    assert probe.frames == 3 and probe.vector.shape == (embedder.dimension,)
    assert probe.variants is not None and probe.variants.shape == (26, embedder.dimension)  # palm.alignment_search
    assert np.allclose(np.linalg.norm(probe.variants, axis=1), 1.0, atol=1e-5)
    same_palm = embedder.embed_roi(read(images[5]))
    other_palm = embedder.embed_roi(read(Path(str(images[0]).replace("0044_", "0045_"))))
    assert float(probe.vector @ same_palm) > 0.5 > float(probe.vector @ other_palm)


@pytest.mark.real_models
@pytest.mark.real_data
def test_scanner_showing_no_hand_gives_the_reason(
    config: KioskConfig, embedder: PalmEmbedder, data_dir: Path, tmp_path: Path
) -> None:
    config.capture.palm_source = str(scanner_folder(data_dir, tmp_path, ["face_video/alex-lacamoire.png"]))
    capture = open_palm_capture(config, embedder)
    assert capture is not None
    capture.source.start()
    try:
        with pytest.raises(ProbeError, match="no usable palm: no hand found"):
            capture.probe(timeout_s=1.5)
    finally:
        capture.source.stop()


def test_no_scanner_configured(config: KioskConfig, embedder: PalmEmbedder) -> None:
    config.capture.palm_source = None
    assert open_palm_capture(config, embedder) is None
