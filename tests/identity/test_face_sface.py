"""SFace and the FaceNet+SFace fusion: input layout, fusion arithmetic, mirroring, and the real models on LFW."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.identity.align import ARCFACE_TEMPLATE_112
from kiosk.identity.face import FacePipeline, read_image
from kiosk.identity.facenet import FaceNetEmbedder
from kiosk.identity.fused import FusedFaceEmbedder
from kiosk.identity.sface import PRECROPPED_CONTEXT, SFaceEmbedder, align_precropped, load_sface, precropped_landmarks


class RecordingEncoder:
    """Returns a fixed vector per call and keeps what it was fed."""

    def __init__(self, output: str, vector: np.ndarray) -> None:
        self.output_names = [output]
        self.vector = vector.astype(np.float32)
        self.fed: list[np.ndarray] = []

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        (batch,) = inputs.values()
        self.fed.append(np.array(batch))
        # The vector depends on the mean of the input, so a mirrored crop can be told apart when it differs.
        return {self.output_names[0]: (self.vector * (1.0 + float(batch.mean()) / 1000.0))[None]}


def sface_with(vector: np.ndarray) -> tuple[SFaceEmbedder, RecordingEncoder]:
    encoder = RecordingEncoder("fc1", vector)
    return SFaceEmbedder(encoder, "sha-sface"), encoder


def facenet_with(vector: np.ndarray) -> tuple[FaceNetEmbedder, RecordingEncoder]:
    encoder = RecordingEncoder("embeddings:0", vector)
    return FaceNetEmbedder(encoder, "sha-facenet"), encoder


def unit(seed: int, dim: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim)
    return vector / np.linalg.norm(vector)


def test_sface_gets_raw_rgb_values_channels_first_one_image_per_call() -> None:
    embedder, encoder = sface_with(unit(1, 128))
    crop = np.zeros((112, 112, 3), dtype=np.uint8)
    crop[..., 0] = 200  # red
    vectors = embedder.embed_crops([crop, crop])
    assert [fed.shape for fed in encoder.fed] == [(1, 3, 112, 112)] * 2
    assert encoder.fed[0][0, 0].max() == 200.0 and encoder.fed[0][0, 1:].max() == 0.0  # not standardised
    assert vectors.shape == (2, 128) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_precropped_landmarks_land_on_the_arcface_template() -> None:
    height, width = 90, 80
    landmarks = precropped_landmarks(height, width)
    pad_y, pad_x = round(height * PRECROPPED_CONTEXT / 2), round(width * PRECROPPED_CONTEXT / 2)
    # Eye and mouth points, relative to the crop, are where LFW3D faces have them.
    relative = (landmarks - [pad_x, pad_y]) / [width, height]
    assert relative[0, 0] < relative[2, 0] < relative[1, 0]  # left eye, nose, right eye
    assert relative[:2, 1].max() < relative[2, 1] < relative[3:, 1].min()  # eyes above nose above mouth
    # A face drawn as dots at those landmarks comes out with the dots on the template.
    face = np.zeros((height, width, 3), dtype=np.uint8)
    for x, y in (landmarks - [pad_x, pad_y]).round().astype(int):
        face[y - 1 : y + 2, x - 1 : x + 2] = 255
    aligned = align_precropped(face, 112)
    for x, y in ARCFACE_TEMPLATE_112.round().astype(int):
        assert aligned[y - 2 : y + 3, x - 2 : x + 3].max() > 100, (x, y)


def test_fused_cosine_is_the_weighted_mean_of_the_two_cosines() -> None:
    facenet_a, _ = facenet_with(unit(1, 512))
    sface_a, _ = sface_with(unit(2, 128))
    facenet_b, _ = facenet_with(unit(3, 512))
    sface_b, _ = sface_with(unit(4, 128))
    crop = np.full((2, 160, 160, 3), 100, dtype=np.uint8)
    for weight in (0.5, 0.7):
        a = FusedFaceEmbedder(facenet_a, sface_a, weight).embed_crops([crop])[0]
        b = FusedFaceEmbedder(facenet_b, sface_b, weight).embed_crops([crop])[0]
        expected = weight * float(unit(1, 512) @ unit(3, 512)) + (1 - weight) * float(unit(2, 128) @ unit(4, 128))
        assert a.shape == (640,) and float(a @ b) == pytest.approx(expected, abs=1e-5)


def test_fused_crop_holds_both_models_crops_and_the_identity_names_both_models() -> None:
    facenet, facenet_encoder = facenet_with(unit(1, 512))
    sface, sface_encoder = sface_with(unit(2, 128))
    fused = FusedFaceEmbedder(facenet, sface, 0.5)
    assert fused.model_sha256 != FusedFaceEmbedder(facenet, sface, 0.6).model_sha256
    face = np.random.default_rng(0).integers(0, 255, (90, 90, 3), dtype=np.uint8)
    crop = fused.crop_precropped(face)
    assert crop.shape == (2, 160, 160, 3)
    fused.embed_crops([crop])
    assert facenet_encoder.fed[-1].shape == (1, 160, 160, 3)
    assert sface_encoder.fed[-1].shape == (1, 3, 112, 112)
    with pytest.raises(ValueError):
        FusedFaceEmbedder(facenet, sface, 1.0)


def test_flip_augmentation_mirrors_each_model_crop_not_the_stack() -> None:
    facenet, facenet_encoder = facenet_with(unit(1, 512))
    sface, sface_encoder = sface_with(unit(2, 128))
    pipeline = FacePipeline.__new__(FacePipeline)
    pipeline.embedder = FusedFaceEmbedder(facenet, sface, 0.5)
    crop = np.zeros((2, 160, 160, 3), dtype=np.uint8)
    crop[0, :, :80] = 255  # FaceNet crop: left half white
    crop[1, :80] = 255  # alignment crop: top half white
    pipeline.embed_aligned([crop])
    plain, mirrored = facenet_encoder.fed
    assert plain[0, :, :80].min() > 0 and mirrored[0, :, 80:].min() > 0  # left-right swapped
    plain, mirrored = sface_encoder.fed
    assert np.array_equal(plain, mirrored)  # a top/bottom split is unchanged by a left-right mirror


@pytest.mark.real_models
@pytest.mark.real_data
def test_sface_alone_and_fused_separate_lfw_genuine_from_impostor_pairs(
    base_config: KioskConfig, data_dir: Path
) -> None:
    from kiosk.identity.face import load_face_embedder

    lfw = data_dir / "lfw3d_frontalized"
    rows = [line.split() for line in (lfw / "pairs.txt").read_text().splitlines()[1:]]

    def image(name: str, index: str) -> np.ndarray:
        return read_image(lfw / "images" / name / f"{name}_{int(index):04d}.jpg")

    sface_config = base_config.model_copy(update={"face": base_config.face.model_copy(update={"embedder": "sface"})})
    for config in (sface_config, base_config):
        embedder = load_face_embedder(config)

        def score(first: np.ndarray, second: np.ndarray) -> float:
            return float(embedder.embed_crop(first) @ embedder.embed_crop(second))  # noqa: B023

        genuine = [score(image(r[0], r[1]), image(r[0], r[2])) for r in rows[:4]]
        impostor = [score(image(r[0], r[1]), image(r[2], r[3])) for r in rows[300:304]]
        assert min(genuine) > max(impostor), (config.face.embedder, genuine, impostor)


@pytest.mark.real_models
def test_sface_model_is_the_verified_manifest_file(base_config: KioskConfig, model_store: object) -> None:
    embedder = load_sface(base_config, model_store)  # type: ignore[arg-type]
    assert embedder.model_sha256 == "0ba9fbfa01b5270c96627c4ef784da859931e02f04419c829e83484087c34e79"
    vector = embedder.embed_crops([np.full((112, 112, 3), 128, dtype=np.uint8)])
    assert vector.shape == (1, 128) and np.isfinite(vector).all()
