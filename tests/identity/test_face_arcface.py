"""The ArcFace-style ONNX path, on small ONNX models the tests build themselves with onnx.helper."""

from __future__ import annotations

import hashlib
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiosk.config import KioskConfig
from kiosk.errors import ModelError
from kiosk.identity.arcface import load_arcface
from kiosk.identity.face import load_face_embedder

DIM = 128
POOL = 8


def projection() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((3 * (112 // POOL) ** 2, DIM)).astype(np.float32)


def build_model(path: Path, channels_last: bool = False, side: int = 112) -> Path:
    """Average-pool 8x8, flatten (C,H,W order), project to 128-d: a stand-in with a checkable output."""
    shape = [None, side, side, 3] if channels_last else [None, 3, side, side]
    nodes = []
    source = "data"
    if channels_last:
        nodes.append(helper.make_node("Transpose", ["data"], ["nchw"], perm=[0, 3, 1, 2]))
        source = "nchw"
    nodes += [
        helper.make_node("AveragePool", [source], ["pooled"], kernel_shape=[POOL, POOL], strides=[POOL, POOL]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "weights"], ["fc1"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_arcface",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("fc1", TensorProto.FLOAT, [None, DIM])],
        initializer=[numpy_helper.from_array(projection(), "weights")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def expected_embedding(crop: np.ndarray) -> np.ndarray:
    x = (crop.astype(np.float32) - 127.5) / 127.5  # HWC RGB
    pooled = x.reshape(112 // POOL, POOL, 112 // POOL, POOL, 3).mean(axis=(1, 3))  # (14, 14, 3)
    vector = pooled.transpose(2, 0, 1).reshape(-1) @ projection()
    return vector / np.linalg.norm(vector)


def arcface_config(base_config: KioskConfig, model: Path) -> KioskConfig:
    config = base_config.model_copy(deep=True)
    config.face.embedder = "arcface-onnx"  # type: ignore[assignment]
    config.face.arcface.model_path = model
    return config


@pytest.mark.parametrize("channels_last", [False, True])
def test_arcface_embeddings_match_the_model_computed_by_hand(
    tmp_path: Path, base_config: KioskConfig, channels_last: bool
) -> None:
    model = build_model(tmp_path / "tiny.onnx", channels_last=channels_last)
    embedder = load_arcface(arcface_config(base_config, model))
    assert embedder.dimension == DIM
    assert embedder.model_sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    crops = [np.random.default_rng(i).integers(0, 256, (112, 112, 3), dtype=np.uint8) for i in range(3)]
    vectors = embedder.embed_crops(crops)
    assert vectors.shape == (3, DIM)
    for crop, vector in zip(crops, vectors, strict=True):
        np.testing.assert_allclose(vector, expected_embedding(crop), atol=1e-4)


@pytest.mark.real_models
@pytest.mark.real_data
def test_arcface_path_runs_the_full_pipeline_on_real_photos(
    tmp_path: Path, base_config: KioskConfig, data_dir: Path
) -> None:
    model = build_model(tmp_path / "tiny.onnx")
    embedder = load_face_embedder(arcface_config(base_config, model))
    assert (embedder.modality, embedder.dimension) == ("face", DIM)
    photo = cv2.imread(str(data_dir / "face_video" / "alex-lacamoire.png"))
    analysis = embedder.analyse(photo)
    assert analysis.requester is not None and analysis.embedding is not None
    assert analysis.embedding.shape == (DIM,)
    assert np.linalg.norm(analysis.embedding) == pytest.approx(1.0, abs=1e-5)
    aligned = embedder.pipeline.align(photo, analysis.requester.detection)
    assert aligned.shape == (112, 112, 3)
    # The aligned face is upright and centred: eyes darker than the cheeks below them, as in a face.
    gray = cv2.cvtColor(aligned, cv2.COLOR_RGB2GRAY).astype(float)
    assert gray[48:56, 30:82].mean() < gray[60:70, 30:82].mean()
    crop = embedder.embed_crop(cv2.resize(photo[150:310, 179:338], (90, 90)))
    assert crop.shape == (DIM,)


def test_arcface_path_rejects_bad_models_with_a_reason(tmp_path: Path, base_config: KioskConfig) -> None:
    unset = base_config.model_copy(deep=True)
    unset.face.embedder = "arcface-onnx"
    unset.face.arcface.model_path = None
    with pytest.raises(ModelError, match=r"face\.arcface\.model_path is not set"):
        load_arcface(unset)
    with pytest.raises(ModelError, match="does not exist"):
        load_arcface(arcface_config(base_config, tmp_path / "missing.onnx"))
    with pytest.raises(ModelError, match="expected 112x112"):
        load_arcface(arcface_config(base_config, build_model(tmp_path / "small.onnx", side=96)))
    (tmp_path / "junk.onnx").write_bytes(b"not a model at all")
    with pytest.raises(ModelError, match="not a readable ONNX"):
        load_arcface(arcface_config(base_config, tmp_path / "junk.onnx"))
