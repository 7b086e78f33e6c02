"""Both face detectors on real photos: one face each, sane landmarks, agreement, nothing on a palm."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.identity.detect import Detector, FaceDetection, create_detector

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]

PHOTOS = ("lin-manuel-miranda.png", "alex-lacamoire.png")


@pytest.fixture(scope="module")
def detectors(base_config: KioskConfig) -> dict[str, Detector]:
    found = {}
    for name in ("mediapipe", "mtcnn"):
        config = base_config.model_copy(deep=True)
        config.face.detector = name  # type: ignore[assignment]
        found[name] = create_detector(config)
    return found


def rgb(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)


def check_geometry(face: FaceDetection) -> None:
    x, _, w, _ = face.box
    eye_left, eye_right, nose, mouth_left, mouth_right = face.landmarks
    assert eye_left[0] < nose[0] < eye_right[0]
    assert max(eye_left[1], eye_right[1]) < nose[1] < min(mouth_left[1], mouth_right[1])
    assert mouth_left[0] < mouth_right[0]
    inside = (face.landmarks[:, 0] > x - 0.1 * w) & (face.landmarks[:, 0] < x + 1.1 * w)
    assert inside.all()


@pytest.mark.parametrize("detector_name", ["mediapipe", "mtcnn"])
@pytest.mark.parametrize("photo", PHOTOS)
def test_reference_photo_has_exactly_one_face_with_sane_landmarks(
    data_dir: Path, detectors: dict[str, Detector], detector_name: str, photo: str
) -> None:
    faces = detectors[detector_name].detect(rgb(data_dir / "face_video" / photo))
    assert len(faces) == 1, [f.box for f in faces]
    assert faces[0].score >= 0.6
    check_geometry(faces[0])


@pytest.mark.parametrize("photo", PHOTOS)
def test_the_two_detectors_agree_on_the_eyes(data_dir: Path, detectors: dict[str, Detector], photo: str) -> None:
    image = rgb(data_dir / "face_video" / photo)
    blaze, mtcnn = (detectors[name].detect(image)[0] for name in ("mediapipe", "mtcnn"))
    eye_distance = float(np.linalg.norm(mtcnn.landmarks[1] - mtcnn.landmarks[0]))
    error = np.linalg.norm(blaze.landmarks[:3] - mtcnn.landmarks[:3], axis=1).max()
    assert error < 0.2 * eye_distance


@pytest.mark.parametrize("detector_name", ["mediapipe", "mtcnn"])
def test_palm_image_has_no_face(data_dir: Path, detectors: dict[str, Detector], detector_name: str) -> None:
    palm = sorted((data_dir / "palm_tongji_palmnet" / "images").glob("*.bmp"))[0]
    assert detectors[detector_name].detect(rgb(palm)) == []


def test_scaled_detection_moves_box_and_landmarks_together() -> None:
    face = FaceDetection((10.0, 20.0, 30.0, 40.0), np.array([[15.0, 25.0]] * 5, np.float32), 0.9)
    big = face.scaled(4.0)
    assert big.box == (40.0, 80.0, 120.0, 160.0)
    assert big.landmarks[0].tolist() == [60.0, 100.0]
