"""Turning a detected face into the crop an embedding model was trained on.

Two kinds of crop:
- FaceNet (davidsandberg 20180408): an MTCNN box plus a margin, resized to 160x160 without
  keeping the aspect ratio and without rotation. We rebuild that box from the five landmarks so
  that both detectors give the same crop geometry.
- ArcFace-style models: a five-point similarity transform onto the standard 112x112 template.
"""

from __future__ import annotations

import cv2
import numpy as np

# The insightface/ArcFace five-point template for 112x112 crops (same landmark order as detect.py).
ARCFACE_TEMPLATE_112 = np.array(
    [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655], [70.7299, 92.2041]],
    dtype=np.float32,
)

# An MTCNN face box measured against its own landmarks on the reference photos and video frames,
# in units of the eye-centre to mouth-centre distance d: about 2.0 d wide, 2.75 d tall, its centre
# 0.2 d above the midpoint between eye centre and mouth centre.
BOX_WIDTH_PER_D = 2.0
BOX_HEIGHT_PER_D = 2.75
BOX_CENTRE_RAISE_PER_D = 0.2


def eye_mouth_distance(landmarks: np.ndarray) -> float:
    eyes = landmarks[:2].mean(axis=0)
    mouth = landmarks[3:5].mean(axis=0)
    return float(np.linalg.norm(mouth - eyes))


def landmark_box(landmarks: np.ndarray, margin: float) -> tuple[float, float, float, float]:
    """The MTCNN-like face box (x, y, w, h) from five landmarks, grown by `margin` x d on each axis."""
    eyes = landmarks[:2].mean(axis=0)
    mouth = landmarks[3:5].mean(axis=0)
    d = max(float(np.linalg.norm(mouth - eyes)), 1.0)
    centre_x, centre_y = (eyes + mouth) / 2
    centre_y -= BOX_CENTRE_RAISE_PER_D * d
    width = (BOX_WIDTH_PER_D + margin) * d
    height = (BOX_HEIGHT_PER_D + margin) * d
    return float(centre_x - width / 2), float(centre_y - height / 2), float(width), float(height)


def crop_box(image: np.ndarray, box: tuple[float, float, float, float], size: int) -> np.ndarray:
    """Crop a box (parts outside the frame filled by edge replication) and resize it to size x size."""
    x, y, w, h = box
    x1, y1 = round(x), round(y)
    x2, y2 = round(x + w), round(y + h)
    x2, y2 = max(x2, x1 + 1), max(y2, y1 + 1)
    height, width = image.shape[:2]
    sx1, sy1, sx2, sy2 = max(x1, 0), max(y1, 0), min(x2, width), min(y2, height)
    if sx2 <= sx1 or sy2 <= sy1:
        return np.zeros((size, size, *image.shape[2:]), dtype=image.dtype)
    region = image[sy1:sy2, sx1:sx2]
    pads = (sy1 - y1, y2 - sy2, sx1 - x1, x2 - sx2)
    if any(pads):
        region = cv2.copyMakeBorder(region, *pads, cv2.BORDER_REPLICATE)
    return resize(region, size)


def resize(image: np.ndarray, size: int) -> np.ndarray:
    shrinking = image.shape[0] > size or image.shape[1] > size
    return cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)


def facenet_crop(rgb: np.ndarray, landmarks: np.ndarray, margin: float, size: int = 160) -> np.ndarray:
    return crop_box(rgb, landmark_box(landmarks, margin), size)


PADDING_MODES = {"reflect": cv2.BORDER_REFLECT_101, "replicate": cv2.BORDER_REPLICATE}
# A tight pre-cropped face (an LFW crop) gets this fraction of its height added by reflection, and
# PRECROPPED_MARGIN_X of its width, so the FaceNet and ArcFace crops see the margin they were trained with.
PRECROPPED_MARGIN = 0.36
PRECROPPED_MARGIN_X = 0.1


def pad_precropped(rgb: np.ndarray, margin: float, margin_x: float | None = None, mode: str = "reflect") -> np.ndarray:
    """Give a tight face crop the margin the model expects by extending its borders.

    `margin` is the fraction of the crop height added in total (half above, half below);
    `margin_x` the same for the width (defaults to `margin`).
    """
    height, width = rgb.shape[:2]
    margin_x = margin if margin_x is None else margin_x
    pad_y, pad_x = round(height * margin / 2), round(width * margin_x / 2)
    if not pad_x and not pad_y:
        return rgb
    return cv2.copyMakeBorder(rgb, pad_y, pad_y, pad_x, pad_x, PADDING_MODES[mode])


def similarity_matrix(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least-squares similarity transform (Umeyama) taking `source` points onto `target`, as 2x3."""
    src = source.astype(np.float64)
    dst = target.astype(np.float64)
    src_mean, dst_mean = src.mean(axis=0), dst.mean(axis=0)
    src_c, dst_c = src - src_mean, dst - dst_mean
    covariance = dst_c.T @ src_c / len(src)
    u, singular, vt = np.linalg.svd(covariance)
    sign = np.eye(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[1, 1] = -1
    rotation = u @ sign @ vt
    variance = (src_c**2).sum() / len(src)
    scale = float(np.trace(np.diag(singular) @ sign) / variance) if variance > 0 else 1.0
    translation = dst_mean - scale * rotation @ src_mean
    return np.hstack([scale * rotation, translation[:, None]]).astype(np.float32)


def align_five_point(rgb: np.ndarray, landmarks: np.ndarray, size: int = 112) -> np.ndarray:
    """Warp the face onto the ArcFace template (scaled to `size`)."""
    template = ARCFACE_TEMPLATE_112 * (size / 112.0)
    points = landmarks.astype(np.float32)
    image = rgb
    matrix = similarity_matrix(points, template)
    scale = float(np.sqrt(abs(np.linalg.det(matrix[:, :2]))))
    if scale < 0.5:
        # Shrink with area averaging first: a strong warp-downscale aliases (4K frames).
        factor = min(1.0, 2 * scale)
        image = cv2.resize(rgb, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
        points = points * factor
        matrix = similarity_matrix(points, template)
    return cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
