"""The face pipeline with the real models on real images: requester, embeddings, gates, bad input."""

from __future__ import annotations

import hashlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.face import FaceEmbedder, as_bgr8, load_face_embedder, read_image
from kiosk.identity.quality import TOO_BLURRED, TOO_DARK, TOO_TURNED

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]

LIN, ALEX = "lin-manuel-miranda.png", "alex-lacamoire.png"


@pytest.fixture(scope="module")
def embedder(base_config: KioskConfig) -> FaceEmbedder:
    return load_face_embedder(base_config)


@pytest.fixture(scope="module")
def photos(data_dir: Path) -> dict[str, np.ndarray]:
    return {name: read_image(data_dir / "face_video" / name) for name in (LIN, ALEX)}


@pytest.fixture(scope="module")
def references(embedder: FaceEmbedder, photos: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: embedder.embed_image(image) for name, image in photos.items()}


def video_frame(data_dir: Path, index: int) -> np.ndarray:
    capture = cv2.VideoCapture(str(data_dir / "face_video" / "short_hamilton_clip.mp4"))
    capture.set(cv2.CAP_PROP_POS_FRAMES, index)
    ok, frame = capture.read()
    capture.release()
    assert ok
    return frame


def test_embedder_describes_its_model(embedder: FaceEmbedder, model_store: object) -> None:
    assert embedder.modality == "face"
    manifest = model_store.manifest  # type: ignore[attr-defined]
    assert embedder.name == "facenet-20180408-102900+sface-2021dec"
    assert embedder.dimension == 512 + 128
    fused = f"fusion 1: {manifest.get('facenet-20180408-pb').sha256} {manifest.get('sface-2021dec').sha256} weight 0.5"
    assert embedder.model_sha256 == hashlib.sha256(fused.encode()).hexdigest()


@pytest.mark.parametrize("name", [LIN, ALEX])
def test_reference_photo_gives_one_gated_face_and_a_unit_embedding(
    embedder: FaceEmbedder, photos: dict[str, np.ndarray], name: str
) -> None:
    analysis = embedder.analyse(photos[name])
    assert len(analysis.faces) == 1
    assert analysis.requester_index == 0 and analysis.reason == ""
    assert not analysis.second_face_in_view and analysis.faces_in_view == 1
    assert analysis.embedding is not None and analysis.embedding.shape == (640,)
    assert np.linalg.norm(analysis.embedding) == pytest.approx(1.0, abs=1e-5)
    assert {"detect", "quality", "align", "embed", "total"} <= set(analysis.timings_ms)


def test_the_same_person_on_video_is_closer_to_his_photo_than_to_the_other_person(
    embedder: FaceEmbedder, references: dict[str, np.ndarray], data_dir: Path
) -> None:
    assert float(references[LIN] @ references[ALEX]) < 0.3
    probe = embedder.embed_image(video_frame(data_dir, 150))  # Lin-Manuel Miranda on stage, frontal
    assert float(probe @ references[LIN]) > 0.5
    assert float(probe @ references[LIN]) > float(probe @ references[ALEX]) + 0.3


def test_lfw_genuine_pairs_score_above_impostor_pairs(embedder: FaceEmbedder, data_dir: Path) -> None:
    lfw = data_dir / "lfw3d_frontalized"
    rows = [line.split() for line in (lfw / "pairs.txt").read_text().splitlines()[1:]]

    def image(name: str, index: str) -> np.ndarray:
        return read_image(lfw / "images" / name / f"{name}_{int(index):04d}.jpg")

    def score(first: np.ndarray, second: np.ndarray) -> float:
        return float(embedder.embed_crop(first) @ embedder.embed_crop(second))

    genuine = [score(image(r[0], r[1]), image(r[0], r[2])) for r in rows[:4]]
    impostor = [score(image(r[0], r[1]), image(r[2], r[3])) for r in rows[300:304]]
    assert min(genuine) > max(impostor), (genuine, impostor)


def test_palm_image_has_no_face_and_says_so(embedder: FaceEmbedder, data_dir: Path) -> None:
    palm = read_image(sorted((data_dir / "palm_tongji_palmnet" / "images").glob("*.bmp"))[0])
    analysis = embedder.analyse(palm)
    assert analysis.faces == () and analysis.embedding is None and analysis.reason == "no face found"
    with pytest.raises(ProbeError, match="no face found"):
        embedder.embed_image(palm)


def test_two_faces_side_by_side_pick_the_larger_and_flag_the_second(
    embedder: FaceEmbedder, photos: dict[str, np.ndarray], references: dict[str, np.ndarray]
) -> None:
    lin, alex = as_bgr8(photos[LIN]), as_bgr8(photos[ALEX])  # the PNGs carry an alpha channel
    canvas = np.zeros((max(lin.shape[0], alex.shape[0]), lin.shape[1] + alex.shape[1], 3), np.uint8)
    canvas[: lin.shape[0], : lin.shape[1]] = lin
    canvas[: alex.shape[0], lin.shape[1] :] = alex
    analysis = embedder.analyse(canvas)
    assert len(analysis.faces) == 2 and analysis.faces_in_view == 2
    assert analysis.second_face_in_view
    assert analysis.embedding is not None
    assert float(analysis.embedding @ references[LIN]) > 0.9  # the larger face is the requester


def test_grayscale_16_bit_and_4k_give_the_same_person(
    embedder: FaceEmbedder, photos: dict[str, np.ndarray], references: dict[str, np.ndarray]
) -> None:
    photo = as_bgr8(photos[ALEX])
    gray = cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY)
    assert float(embedder.embed_image(gray) @ references[ALEX]) > 0.85
    deep = photo.astype(np.uint16) * 257
    assert float(embedder.embed_image(deep) @ references[ALEX]) > 0.99
    frame_4k = np.zeros((2160, 3840, 3), np.uint8)
    big = cv2.resize(photo, None, fx=4.0, fy=4.0, interpolation=cv2.INTER_CUBIC)
    frame_4k[500 : 500 + big.shape[0], 1000 : 1000 + big.shape[1]] = big
    analysis = embedder.analyse(frame_4k)
    assert len(analysis.faces) == 1 and analysis.embedding is not None
    x, _, width, _ = analysis.faces[0].detection.box
    assert 1000 < x < 1000 + big.shape[1] and width > 400  # full-resolution coordinates
    assert float(analysis.embedding @ references[ALEX]) > 0.9


def test_corrupt_and_empty_input_raise_probe_errors(embedder: FaceEmbedder, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0" + bytes(range(200)))
    with pytest.raises(ProbeError, match="not a readable image"):
        read_image(broken)
    with pytest.raises(ProbeError, match="empty"):
        read_image(b"")
    with pytest.raises(ProbeError, match="empty"):
        embedder.embed_image(np.zeros((0, 0, 3), np.uint8))
    with pytest.raises(ProbeError):
        embedder.embed_image(None)
    assert embedder.analyse(np.zeros((480, 640, 3), np.uint8)).reason == "no face found"


def test_quality_gates_reject_blur_darkness_and_a_profile_with_reasons(
    embedder: FaceEmbedder, photos: dict[str, np.ndarray], data_dir: Path
) -> None:
    blurred = cv2.GaussianBlur(photos[ALEX], (0, 0), 6)
    analysis = embedder.analyse(blurred)
    assert analysis.faces and analysis.embedding is None
    assert TOO_BLURRED in analysis.faces[0].quality.reasons and "too blurred" in analysis.reason

    dark = (photos[ALEX] * 0.15).astype(np.uint8)
    analysis = embedder.analyse(dark)
    assert analysis.faces and TOO_DARK in analysis.faces[0].quality.reasons
    with pytest.raises(ProbeError, match="too dark"):
        embedder.embed_image(dark)

    profile = embedder.analyse(video_frame(data_dir, 30))  # a close-up side view of the performer
    assert profile.faces and TOO_TURNED in profile.faces[0].quality.reasons and profile.embedding is None


def test_embed_images_stacks_and_names_the_bad_one(embedder: FaceEmbedder, photos: dict[str, np.ndarray]) -> None:
    stacked = embedder.embed_images([photos[LIN], photos[ALEX]])
    assert stacked.shape == (2, 640) and stacked.dtype == np.float32
    with pytest.raises(ProbeError):
        embedder.embed_images([photos[LIN], np.zeros((100, 100, 3), np.uint8)])
