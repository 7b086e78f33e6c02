"""The palm embedder on real Tongji ROIs, its ROI quality gates, and the trained-ONNX slot."""

from __future__ import annotations

import hashlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ModelError, ProbeError
from kiosk.identity.gabor import build_onnx
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder
from kiosk.identity.palm_encoders import compcode_params


def read_palm(data_dir: Path, palm: int, sample: int) -> np.ndarray:
    """The `sample`-th (1-based, in file order) Tongji ROI of `palm`: sample numbers have gaps."""
    paths = sorted((data_dir / "palm_tongji_palmnet" / "images").glob(f"{palm:04d}_*.bmp"))
    image = cv2.imread(str(paths[sample - 1]))
    assert image is not None, paths[sample - 1]
    return image


@pytest.fixture(scope="module")
def embedder(base_config: KioskConfig) -> PalmEmbedder:
    return load_palm_embedder(base_config)


def test_model_sha_is_the_generated_graph(embedder: PalmEmbedder, base_config: KioskConfig) -> None:
    params = compcode_params()
    graph = build_onnx(params)
    assert embedder.modality == "palm"
    assert embedder.dimension == params.dimension
    assert embedder.model_sha256 == hashlib.sha256(graph).hexdigest()
    assert embedder.encoder.model_path.read_bytes() == graph  # type: ignore[attr-defined]


@pytest.mark.real_data
def test_same_palm_scores_above_other_palms(embedder: PalmEmbedder, data_dir: Path) -> None:
    palms, samples = (40, 55, 71, 90), (1, 2, 3)
    images = [read_palm(data_dir, p, s) for p in palms for s in samples]
    vectors = embedder.embed_rois(images)
    assert vectors.shape == (len(images), embedder.dimension) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    labels = np.repeat(np.arange(len(palms)), len(samples))
    scores = vectors @ vectors.T
    same = (labels[:, None] == labels[None, :]) & ~np.eye(len(images), dtype=bool)
    other = labels[:, None] != labels[None, :]
    assert scores[same].min() > scores[other].max(), (scores[same].min(), scores[other].max())
    np.testing.assert_allclose(embedder.embed_roi(images[0]), vectors[0], atol=1e-5)


@pytest.mark.real_data
def test_backends_agree(base_config: KioskConfig, data_dir: Path) -> None:
    images = [read_palm(data_dir, 12, s) for s in (1, 2)]
    openvino = load_palm_embedder(base_config, backend="openvino").embed_rois(images)
    onnxruntime = load_palm_embedder(base_config, backend="onnxruntime").embed_rois(images)
    assert (openvino * onnxruntime).sum(axis=1).min() >= 0.999


@pytest.mark.real_data
def test_sixteen_bit_and_gray_inputs_give_the_same_vector(embedder: PalmEmbedder, data_dir: Path) -> None:
    image = read_palm(data_dir, 5, 1)
    reference = embedder.embed_roi(image)
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    assert float(embedder.embed_roi(gray) @ reference) > 0.9999
    assert float(embedder.embed_roi(gray.astype(np.uint16) * 257) @ reference) > 0.9999


@pytest.mark.real_data
@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda im: im[:40, :40], "too small"),
        (lambda im: (im * 0.2).astype(np.uint8), "too dark"),
        (lambda im: cv2.GaussianBlur(im, (0, 0), 3), "blurred"),
        (lambda im: np.full_like(im, 128), "no texture"),
        (lambda im: np.full(im.shape, np.nan, np.float32), "NaN"),
        (lambda im: im[None], "unsupported image shape"),
    ],
)
def test_bad_roi_is_refused_with_a_reason(embedder: PalmEmbedder, data_dir: Path, spoil, reason: str) -> None:  # type: ignore[no-untyped-def]
    image = read_palm(data_dir, 3, 1)
    with pytest.raises(ProbeError, match=reason):
        embedder.embed_roi(spoil(image))


def _with_black_corner(image: np.ndarray, share: float) -> np.ndarray:
    spoiled = image.copy()
    side = round(min(image.shape[:2]) * share**0.5)
    spoiled[:side, :side] = 0
    return spoiled


@pytest.mark.real_data
def test_roi_that_slipped_off_the_palm_is_refused(embedder: PalmEmbedder, data_dir: Path) -> None:
    image = read_palm(data_dir, 3, 1)
    embedder.embed_roi(_with_black_corner(image, 0.05))  # a rotation wedge's size: still a palm
    with pytest.raises(ProbeError, match="does not fill"):
        embedder.embed_roi(_with_black_corner(image, 0.2))


@pytest.mark.real_data
def test_tongji_failed_crops_are_refused_and_their_palms_other_samples_kept(
    embedder: PalmEmbedder, data_dir: Path
) -> None:
    """Three of Tongji's ROIs show the hand's edge and the dark background (0027_0002, 0065_0002, 0068_0010):
    a capture the scanner must ask again for, not a template."""
    folder = data_dir / "palm_tongji_palmnet" / "images"

    def read(name: str) -> np.ndarray:
        image = cv2.imread(str(folder / f"{name}.bmp"))
        assert image is not None, name
        return image

    for name in ("0027_0002", "0065_0002", "0068_0010"):
        with pytest.raises(ProbeError, match="does not fill"):
            embedder.embed_roi(read(name))
    for name in ("0027_0001", "0065_0003", "0068_0009", "0006_0005", "0002_0004"):  # the last two: wedges
        assert embedder.embed_roi(read(name)).shape == (embedder.dimension,)


def test_not_an_array_is_refused(embedder: PalmEmbedder) -> None:
    with pytest.raises(ProbeError, match="not an image"):
        embedder.embed_roi("palm.png")  # type: ignore[arg-type]
    assert embedder.embed_rois([]).shape == (0, embedder.dimension)


# ---- trained ONNX slot -------------------------------------------------------------------------
def tiny_palm_onnx(path: Path, channels: int = 1, side: int = 128) -> Path:
    """A small convolutional feature extractor standing in for a trained CCNet export."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = rng.standard_normal((8, channels, 5, 5)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["image", "w"], ["features"], kernel_shape=[5, 5], strides=[4, 4]),
            helper.make_node("Relu", ["features"], ["relu"]),
            helper.make_node("MaxPool", ["relu"], ["pooled"], kernel_shape=[4, 4], strides=[4, 4]),
            helper.make_node("Flatten", ["pooled"], ["embedding"], axis=1),
        ],
        "tiny_palm",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["n", channels, side, side])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["n", None])],
        initializer=[numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize(("channels", "side", "dimension"), [(1, 128, 8 * 7 * 7), (3, 112, 8 * 6 * 6)])
@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_trained_onnx_model_through_the_same_interface(
    config: KioskConfig, tmp_path: Path, channels: int, side: int, dimension: int, backend: str
) -> None:
    model = tiny_palm_onnx(tmp_path / "ccnet.onnx", channels, side)
    config.palm.encoder = "onnx"
    config.palm.onnx.model_path = model
    embedder = load_palm_embedder(config, backend=backend)  # type: ignore[arg-type]
    assert embedder.model_sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert embedder.dimension == dimension
    rng = np.random.default_rng(1)
    rois = [rng.integers(40, 220, (150, 150), dtype=np.uint8) for _ in range(3)]
    vectors = embedder.embed_rois(rois)
    assert vectors.shape == (3, dimension)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert float(vectors[0] @ vectors[1]) < 0.9999  # different inputs, different vectors


def test_trained_onnx_misconfiguration_is_a_model_error(config: KioskConfig, tmp_path: Path) -> None:
    config.palm.encoder = "onnx"
    with pytest.raises(ModelError, match=r"palm\.onnx\.model_path is not set"):
        load_palm_embedder(config)
    config.palm.onnx.model_path = tmp_path / "missing.onnx"
    with pytest.raises(ModelError, match="does not exist"):
        load_palm_embedder(config)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    config.palm.onnx.model_path = garbage
    with pytest.raises(ModelError):
        load_palm_embedder(config)
