"""Quality gates for a detected face: too small, too blurred, too turned, too dark — with reasons."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from kiosk.identity.align import crop_box, landmark_box
from kiosk.identity.detect import FaceDetection

# Sharpness and brightness are measured on the inner face resized to a fixed size, so the numbers
# do not depend on how far the person stands (Laplacian variance grows when an image is shrunk).
MEASURE_SIZE = 96
MIN_SHARPNESS = 25.0  # Laplacian variance of the inner face at MEASURE_SIZE
MAX_TURN = 0.5  # nose offset from the eyes' midline, 0 frontal .. 1 profile (see face_turn)
MIN_BRIGHTNESS = 30.0  # mean gray level of the inner face

TOO_SMALL, TOO_BLURRED, TOO_TURNED, TOO_DARK = "too-small", "too-blurred", "too-turned", "too-dark"


@dataclass(frozen=True)
class QualityVerdict:
    passed: bool
    reasons: tuple[str, ...]  # codes: too-small, too-blurred, too-turned, too-dark
    size_px: float  # face side in frame pixels (landmark box height)
    sharpness: float  # Laplacian variance of the inner face at MEASURE_SIZE
    turn: float  # 0 frontal .. 1 profile (nose position between the eyes)
    brightness: float  # mean gray level of the inner face
    messages: tuple[str, ...] = ()

    def describe(self) -> str:
        return "; ".join(self.messages) if self.messages else "ok"


def face_turn(landmarks: np.ndarray) -> float:
    """How far the nose sits from the eyes' midline, along the eye axis: 0 frontal, 1 nose at an eye."""
    eye_left, eye_right, nose = landmarks[0], landmarks[1], landmarks[2]
    axis = eye_right - eye_left
    length_sq = float(axis @ axis)
    if length_sq < 1e-6:
        return 1.0
    position = float((nose - eye_left) @ axis) / length_sq  # 0 at the left eye, 1 at the right eye
    return float(min(abs(2 * position - 1), 1.0))


def face_size(landmarks: np.ndarray) -> float:
    return float(landmark_box(landmarks, 0.0)[3])


def assess(frame: np.ndarray, detection: FaceDetection, min_face_px: int) -> QualityVerdict:
    """Judge one face of a BGR or gray uint8 frame: at least `min_face_px` tall (face.min_face_px), sharp,
    frontal and lit enough."""
    landmarks = detection.landmarks
    size = face_size(landmarks)
    inner = crop_box(frame, landmark_box(landmarks, 0.0), MEASURE_SIZE)
    if inner.ndim == 3:
        inner = cv2.cvtColor(inner, cv2.COLOR_BGR2GRAY)
    sharpness = float(cv2.Laplacian(inner, cv2.CV_64F).var())
    brightness = float(inner.mean())
    turn = face_turn(landmarks)
    reasons: list[str] = []
    messages: list[str] = []
    if size < min_face_px:
        reasons.append(TOO_SMALL)
        messages.append(f"face too small ({size:.0f} px < {min_face_px} px): step closer")
    if sharpness < MIN_SHARPNESS:
        reasons.append(TOO_BLURRED)
        messages.append(f"face too blurred (sharpness {sharpness:.0f} < {MIN_SHARPNESS:.0f}): hold still")
    if turn > MAX_TURN:
        reasons.append(TOO_TURNED)
        messages.append(f"face too turned ({turn:.2f} > {MAX_TURN:.2f}): look at the camera")
    if brightness < MIN_BRIGHTNESS:
        reasons.append(TOO_DARK)
        messages.append(f"face too dark (mean {brightness:.0f} < {MIN_BRIGHTNESS:.0f}): more light needed")
    return QualityVerdict(not reasons, tuple(reasons), size, sharpness, turn, brightness, tuple(messages))
