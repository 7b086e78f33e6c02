"""Palm ROI: geometry on synthetic landmarks (pure), and MediaPipe on drawn hands and real photos.

No photo of a whole hand is available here (shared/data holds only Tongji ROI crops, and the installed
packages ship none), so full-hand tests use a drawn hand whose palm carries a real Tongji palmprint.
MediaPipe's HandLandmarker finds 21 landmarks on it; the drawing is crude, so these tests check the
pipeline's behaviour (accept, rotate, refuse with a reason), not landmark accuracy on real hands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder
from kiosk.identity.palm_roi import (
    INDEX_MCP,
    PINKY_MCP,
    ROI_GAP,
    WRIST,
    check_open_hand,
    crop_palm_roi,
    finger_extension,
    palm_roi_corners,
)


# ---- synthetic landmarks -------------------------------------------------------------------------
def upright_hand(open_fingers: bool = True) -> np.ndarray:
    """21 landmarks of a right palm, fingers up, knuckle span 100 px, wrist at the bottom."""
    points = np.zeros((21, 2))
    points[WRIST] = (200, 330)
    points[1:5] = [(150, 300), (120, 270), (100, 240), (85, 215)]  # thumb
    for finger, x in enumerate((150, 183, 217, 250)):
        knuckle = 5 + 4 * finger
        points[knuckle] = (x, 200)
        if open_fingers:
            points[knuckle + 1 : knuckle + 4] = [(x, 160), (x, 130), (x, 105)]
        else:  # curled: the finger folds back over the palm
            points[knuckle + 1 : knuckle + 4] = [(x, 175), (x, 200), (x, 225)]
    return points


def rotate(points: np.ndarray, degrees: float, centre: tuple[float, float] = (200, 200)) -> np.ndarray:
    matrix = cv2.getRotationMatrix2D(centre, degrees, 1.0)
    return np.hstack([points, np.ones((len(points), 1))]) @ matrix.T


def test_roi_square_sits_below_the_knuckle_line() -> None:
    points = upright_hand()
    top_left, top_right, bottom_left = palm_roi_corners(points)
    span = float(np.linalg.norm(points[PINKY_MCP] - points[INDEX_MCP]))
    np.testing.assert_allclose(top_left, np.array([150.0, 200.0 + ROI_GAP * span]))
    np.testing.assert_allclose(top_right - top_left, np.array([span, 0.0]))
    np.testing.assert_allclose(bottom_left - top_left, np.array([0.0, span]))  # towards the wrist


@pytest.mark.parametrize("degrees", [30, 90, 180, -135])
def test_roi_follows_the_hand_rotation(degrees: float) -> None:
    points = upright_hand()
    rotated = rotate(points, degrees)
    expected = rotate(palm_roi_corners(points), degrees)
    np.testing.assert_allclose(palm_roi_corners(rotated), expected, atol=1e-9)


@pytest.mark.parametrize("degrees", [35, 90, 200])
def test_rotated_image_gives_the_same_roi(degrees: float) -> None:
    rng = np.random.default_rng(3)
    image = cv2.GaussianBlur(rng.integers(0, 255, (400, 400), dtype=np.uint8), (0, 0), 2)
    points = upright_hand()
    matrix = cv2.getRotationMatrix2D((200, 200), degrees, 1.0)
    turned = cv2.warpAffine(image, matrix, (400, 400))
    upright_roi = crop_palm_roi(image, points, 64).astype(np.float64)
    turned_roi = crop_palm_roi(turned, rotate(points, degrees), 64).astype(np.float64)
    assert np.corrcoef(upright_roi.ravel(), turned_roi.ravel())[0, 1] > 0.97


def test_open_and_curled_fingers() -> None:
    assert finger_extension(upright_hand()).min() > 1.5
    assert finger_extension(upright_hand(open_fingers=False)).max() < 1.2
    check_open_hand(upright_hand())
    with pytest.raises(ProbeError, match="not open"):
        check_open_hand(upright_hand(open_fingers=False))
    with pytest.raises(ProbeError, match="too small"):
        check_open_hand(upright_hand() * 0.3)
    sideways = upright_hand() * 2
    sideways[:, 0] = 400 + (sideways[:, 0] - 400) * 0.3  # hand turned edge-on: knuckles bunch up
    with pytest.raises(ProbeError, match="sideways"):
        check_open_hand(sideways)


# ---- drawn hands through MediaPipe -------------------------------------------------------------------
def drawn_hand(texture: np.ndarray, size: int = 640, pose: str = "open") -> np.ndarray:
    """A drawn right hand (palm view) with a real palmprint pasted on the palm; pose: open | stubs | fist."""
    mask = np.zeros((size, size), np.uint8)
    centre = np.array([0.5, 0.62]) * size
    cv2.ellipse(mask, tuple(centre.astype(int)), (int(size * 0.16), int(size * 0.19)), 0, 0, 360, 255, -1)
    cv2.rectangle(mask, (int(centre[0] - size * 0.12), int(centre[1])), (int(centre[0] + size * 0.12), size), 255, -1)
    fingers = [  # base offset (x, y) as a fraction of size, angle in degrees, length, width
        (-0.13, 0.02, -50, 0.20, 0.070),
        (-0.11, -0.17, -10, 0.25, 0.060),
        (-0.035, -0.19, -2, 0.28, 0.062),
        (0.045, -0.18, 6, 0.26, 0.058),
        (0.115, -0.14, 18, 0.20, 0.050),
    ]
    for i, (dx, dy, angle, length, width) in enumerate(fingers):
        if pose == "fist" and i > 0:
            continue
        if pose == "stubs" and i > 0:
            length = 0.06
        base = centre + np.array([dx, dy]) * size
        theta = np.deg2rad(60 if pose == "fist" else angle)
        direction = np.array([np.sin(theta), -np.cos(theta)])
        normal = np.array([-direction[1], direction[0]])
        tip = base + direction * length * size
        half = width * size / 2
        outline = [base + normal * half, tip + normal * half * 0.84, tip - normal * half * 0.84, base - normal * half]
        cv2.fillConvexPoly(mask, np.array(outline).astype(np.int32), 255)
        cv2.circle(mask, tuple(tip.astype(int)), int(half * 0.84), 255, -1)
    if pose == "fist":  # folded fingers: a row of knuckles over the top of the palm
        for k in range(4):
            knuckle = (int(centre[0] + (k - 1.5) * size * 0.075), int(centre[1] - size * 0.17))
            cv2.circle(mask, knuckle, int(size * 0.045), 255, -1)
    shade = np.clip(cv2.distanceTransform(mask, cv2.DIST_L2, 5) / (size * 0.04), 0, 1) ** 0.5
    gray = np.full((size, size), 0.85, np.float32)
    side = int(size * 0.34)
    patch = cv2.resize(texture, (side, side), interpolation=cv2.INTER_AREA).astype(np.float32)
    top, left = int(centre[1] - side * 0.55), int(centre[0] - side / 2)
    gray[top : top + side, left : left + side] = np.clip(0.8 + 0.12 * (patch - patch.mean()) / patch.std(), 0.3, 1.2)
    body = np.array([150, 180, 230], np.float32) * ((0.55 + 0.45 * shade) * gray)[..., None]
    alpha = cv2.GaussianBlur(mask.astype(np.float32) / 255, (7, 7), 0)[..., None]
    background = np.array([200, 200, 205], np.float32)
    return np.clip(body * alpha + background * (1 - alpha), 0, 255).astype(np.uint8)


def turn(image: np.ndarray, degrees: float) -> np.ndarray:
    matrix = cv2.getRotationMatrix2D((image.shape[1] / 2, image.shape[0] / 2), degrees, 1.0)
    return cv2.warpAffine(image, matrix, image.shape[1::-1], borderValue=(200, 200, 205))


def palmprint(data_dir: Path, name: str) -> np.ndarray:
    image = cv2.imread(str(data_dir / "palm_tongji_palmnet" / "images" / name), cv2.IMREAD_GRAYSCALE)
    assert image is not None
    return image


@pytest.fixture(scope="module")
def embedder(base_config: KioskConfig) -> Iterator[PalmEmbedder]:
    palm = load_palm_embedder(base_config)
    yield palm
    palm.close()


@pytest.mark.real_models
@pytest.mark.real_data
def test_drawn_open_hand_gives_a_rotation_normalised_roi(embedder: PalmEmbedder, data_dir: Path) -> None:
    hand = drawn_hand(palmprint(data_dir, "0005_0001.bmp"))
    upright = embedder.extract_roi(hand)
    assert upright.roi.shape == (128, 128) and upright.roi.dtype == np.uint8
    assert upright.landmarks is not None and upright.landmarks.points.shape == (21, 2)
    reference = embedder.embed_image(hand)
    other_palm = embedder.embed_image(drawn_hand(palmprint(data_dir, "0040_0001.bmp")))
    assert float(reference @ other_palm) < 0.2
    for degrees in (35, 90, 180):
        # Landmarks move by a few pixels between poses; the code still matches the same palm.
        assert float(embedder.embed_image(turn(hand, degrees)) @ reference) > 0.5, degrees


@pytest.mark.real_models
@pytest.mark.real_data
@pytest.mark.parametrize(("pose", "reason"), [("fist", "not open"), ("stubs", "not open")])
def test_closed_hand_is_refused(embedder: PalmEmbedder, data_dir: Path, pose: str, reason: str) -> None:
    with pytest.raises(ProbeError, match=reason):
        embedder.embed_image(drawn_hand(palmprint(data_dir, "0005_0001.bmp"), pose=pose))


@pytest.mark.real_models
@pytest.mark.real_data
@pytest.mark.parametrize(
    "image_path",
    [
        "face_video/alex-lacamoire.png",
        "lfw3d_frontalized/images/Arnold_Palmer/Arnold_Palmer_0001.jpg",
        "palm_tongji_palmnet/images/0001_0001.bmp",  # a bare ROI has no hand to find: use embed_roi
    ],
)
def test_image_without_a_hand_is_refused(embedder: PalmEmbedder, data_dir: Path, image_path: str) -> None:
    image = cv2.imread(str(data_dir / image_path))
    assert image is not None
    with pytest.raises(ProbeError, match="no hand found"):
        embedder.embed_image(image)


@pytest.mark.real_models
@pytest.mark.real_data
def test_tiny_or_distant_or_blurred_hand_is_refused(embedder: PalmEmbedder, data_dir: Path) -> None:
    hand = drawn_hand(palmprint(data_dir, "0005_0001.bmp"))
    with pytest.raises(ProbeError, match="image is too small"):
        embedder.embed_image(cv2.resize(hand, (48, 48)))
    with pytest.raises(ProbeError, match="hand is too small"):
        embedder.embed_image(cv2.resize(hand, (120, 120), interpolation=cv2.INTER_AREA))
    with pytest.raises(ProbeError, match="blurred"):
        embedder.embed_image(cv2.GaussianBlur(hand, (0, 0), 2.0))
