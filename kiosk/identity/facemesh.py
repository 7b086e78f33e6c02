"""Dense face landmarks (MediaPipe Face Mesh, 468 points) for liveness: eye openness, head yaw, non-rigid motion.

The manifest's `face-landmark` tflite is run on OpenVINO (its TFLite frontend), so no TFLite runtime is needed.
The model takes a 192x192 RGB crop in [0, 1] of a face made upright; it returns 468 (x, y, z) points in crop
pixels and a face-presence logit. The crop is built from the detector's five landmarks: centred on the face
box, rotated so the eyes are level, 1.5x the box side (the margin MediaPipe's own graph uses).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from kiosk.errors import ModelError
from kiosk.identity.align import landmark_box

INPUT_SIZE = 192
CROP_SCALE = 1.5
POINTS = 468

# Six points per eye in the order of the eye-aspect-ratio formula: corner, top, top, corner, bottom, bottom.
RIGHT_EYE = (33, 160, 158, 133, 153, 144)  # the subject's right eye (image left)
LEFT_EYE = (362, 385, 387, 263, 373, 380)
NOSE_TIP = 1
CHEEK_IMAGE_LEFT, CHEEK_IMAGE_RIGHT = 234, 454


@dataclass(frozen=True)
class Mesh:
    points: np.ndarray  # (468, 3) float32: x, y in frame pixels, z in the same scale (relative depth)
    presence: float  # probability that the crop holds a face

    @property
    def xy(self) -> np.ndarray:
        return self.points[:, :2]


def eye_aspect_ratio(points: np.ndarray) -> float:
    """Mean eye openness of both eyes: (two vertical gaps) / (2 x corner distance); ~0.3 open, < 0.15 shut."""
    ratios = []
    for eye in (RIGHT_EYE, LEFT_EYE):
        p = points[list(eye), :2].astype(np.float64)
        width = float(np.linalg.norm(p[0] - p[3]))
        if width < 1e-6:
            continue
        ratios.append((np.linalg.norm(p[1] - p[5]) + np.linalg.norm(p[2] - p[4])) / (2.0 * width))
    return float(np.mean(ratios)) if ratios else 0.0


def head_yaw(points: np.ndarray) -> float:
    """Signed head turn from the nose tip's place between the cheeks: 0 frontal, -1 / +1 fully to either side."""
    left, right, nose = points[CHEEK_IMAGE_LEFT, :2], points[CHEEK_IMAGE_RIGHT, :2], points[NOSE_TIP, :2]
    axis = right - left
    length_sq = float(axis @ axis)
    if length_sq < 1e-6:
        return 0.0
    position = float((nose - left) @ axis) / length_sq  # 0 at the image-left cheek, 1 at the image-right one
    return float(np.clip(2 * position - 1, -1.0, 1.0))


def upright_crop_matrix(landmarks: np.ndarray) -> np.ndarray:
    """2x3 affine taking frame pixels to the model's 192x192 upright face crop."""
    x, y, w, h = landmark_box(landmarks, 0.0)
    centre = (x + w / 2, y + h / 2)
    eye_left, eye_right = landmarks[0], landmarks[1]
    angle = float(np.degrees(np.arctan2(eye_right[1] - eye_left[1], eye_right[0] - eye_left[0])))
    side = max(w, h) * CROP_SCALE
    matrix = cv2.getRotationMatrix2D((float(centre[0]), float(centre[1])), angle, INPUT_SIZE / side)
    matrix[:, 2] += np.array([INPUT_SIZE / 2 - centre[0], INPUT_SIZE / 2 - centre[1]])
    return matrix


class FaceMesh:
    """The Face Mesh model on OpenVINO; thread-safe (one infer request behind a lock)."""

    def __init__(self, model_path: Path, threads: int = 1) -> None:
        import openvino as ov

        if not model_path.is_file():
            raise ModelError(f"face landmark model {model_path} does not exist", "run `kiosk models pull`")
        core = ov.Core()
        try:
            compiled = core.compile_model(
                core.read_model(str(model_path)), "CPU", {"INFERENCE_NUM_THREADS": max(1, threads)}
            )
        except Exception as exc:  # OpenVINO raises RuntimeError subclasses for unreadable models
            raise ModelError(f"OpenVINO cannot load {model_path}: {exc}", "run `kiosk models pull`") from exc
        outputs = {port.get_any_name(): port for port in compiled.outputs}
        by_size = sorted(outputs.values(), key=lambda port: int(np.prod(port.get_shape())))
        self._presence_port, self._points_port = by_size[0], by_size[-1]
        self._request = compiled.create_infer_request()
        self._lock = threading.Lock()

    def run(self, bgr: np.ndarray, landmarks: np.ndarray) -> Mesh:
        """468 landmarks of the face whose five detector landmarks are `landmarks`, in frame pixels."""
        matrix = upright_crop_matrix(landmarks)
        crop = cv2.warpAffine(
            bgr, matrix, (INPUT_SIZE, INPUT_SIZE), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        tensor = cv2.cvtColor(crop, cv2.COLOR_BGR2RGB).astype(np.float32)[None] / 255.0
        with self._lock:
            result = self._request.infer({0: tensor})
            raw = np.array(result[self._points_port]).reshape(POINTS, 3)
            logit = float(np.array(result[self._presence_port]).reshape(-1)[0])
        inverse = cv2.invertAffineTransform(matrix)
        xy = raw[:, :2] @ inverse[:, :2].T + inverse[:, 2]
        scale = float(np.sqrt(abs(np.linalg.det(inverse[:, :2]))))
        points = np.column_stack([xy, raw[:, 2] * scale]).astype(np.float32)
        return Mesh(points, float(1.0 / (1.0 + np.exp(-logit))))


def load_face_mesh(models_dir: Path | None = None, threads: int = 1) -> FaceMesh:
    from kiosk.models import ModelStore

    if models_dir is None:
        from kiosk.config import load_config

        models_dir = load_config().paths.models
    return FaceMesh(ModelStore(models_dir).ensure("face-landmark"), threads=threads)
