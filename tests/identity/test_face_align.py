"""Face geometry and input handling without models: alignment, crop boxes, turn measure, image conversion."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from kiosk.errors import ProbeError
from kiosk.identity.align import (
    ARCFACE_TEMPLATE_112,
    align_five_point,
    crop_box,
    landmark_box,
    pad_precropped,
    similarity_matrix,
)
from kiosk.identity.face import as_bgr8, read_image
from kiosk.identity.quality import face_turn


def test_similarity_matrix_recovers_a_known_transform() -> None:
    angle, scale, shift = np.deg2rad(17), 2.3, np.array([40.0, -12.0])
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    source = ARCFACE_TEMPLATE_112.astype(np.float64)
    target = (scale * (rotation @ source.T)).T + shift
    matrix = similarity_matrix(source, target)
    np.testing.assert_allclose(matrix[:, :2], scale * rotation, atol=1e-4)
    np.testing.assert_allclose(matrix[:, 2], shift, atol=1e-3)


def test_five_point_alignment_puts_the_landmarks_on_the_template() -> None:
    # Draw five dots at a rotated, scaled, shifted copy of the template in a big frame.
    angle, scale, shift = np.deg2rad(-25), 3.1, np.array([210.0, 140.0])
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    landmarks = ((scale * (rotation @ ARCFACE_TEMPLATE_112.T)).T + shift).astype(np.float32)
    frame = np.zeros((720, 720, 3), np.uint8)
    for x, y in landmarks:
        cv2.circle(frame, (round(x), round(y)), 6, (255, 255, 255), -1)
    aligned = align_five_point(frame, landmarks, 112)
    assert aligned.shape == (112, 112, 3)
    for x, y in ARCFACE_TEMPLATE_112:
        assert aligned[round(y), round(x)].min() > 200, (x, y)
    assert aligned[5, 5].max() == 0


def test_landmark_box_is_centred_on_the_face_and_grows_with_the_margin() -> None:
    landmarks = np.array([[40, 50], [80, 50], [60, 70], [45, 90], [75, 90]], np.float32)
    x, _, w, h = landmark_box(landmarks, 0.0)
    assert x + w / 2 == pytest.approx(60)
    assert h > w > 0
    _, _, w2, h2 = landmark_box(landmarks, 0.5)
    assert w2 - w == pytest.approx(h2 - h) and w2 > w


def test_crop_box_pads_outside_the_frame_instead_of_shrinking() -> None:
    frame = np.full((50, 50, 3), 200, np.uint8)
    crop = crop_box(frame, (-25.0, -25.0, 100.0, 100.0), 64)
    assert crop.shape == (64, 64, 3)
    assert (crop == 200).all()  # edge replication, no black border


def test_pad_precropped_adds_the_margin_by_reflection() -> None:
    face = np.arange(90 * 90 * 3, dtype=np.uint8).reshape(90, 90, 3)
    padded = pad_precropped(face, 0.4)
    assert padded.shape == (126, 126, 3)
    np.testing.assert_array_equal(padded[18:108, 18:108], face)
    assert pad_precropped(face, 0.0) is face


def test_turn_is_zero_for_a_frontal_face_and_grows_when_the_nose_moves_to_an_eye() -> None:
    frontal = np.array([[40, 50], [80, 50], [60, 70], [45, 90], [75, 90]], np.float32)
    assert face_turn(frontal) == pytest.approx(0.0)
    turned = frontal.copy()
    turned[2, 0] = 75
    assert face_turn(turned) == pytest.approx(0.75)
    mirrored = frontal.copy()
    mirrored[2, 0] = 45
    assert face_turn(mirrored) == pytest.approx(0.75)


def test_as_bgr8_accepts_gray_16_bit_float_and_bgra() -> None:
    gray = np.full((40, 30), 100, np.uint8)
    assert as_bgr8(gray).shape == (40, 30, 3)
    deep = np.full((40, 30, 3), 65535, np.uint16)
    assert as_bgr8(deep).max() == 255 and as_bgr8(deep).dtype == np.uint8
    assert as_bgr8(np.full((40, 30, 3), 0.5, np.float32)).mean() == pytest.approx(128, abs=1)
    assert as_bgr8(np.zeros((40, 30, 4), np.uint8)).shape == (40, 30, 3)


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (np.zeros((0, 0, 3), np.uint8), "empty"),
        (np.zeros((40, 30, 2), np.uint8), "unsupported image shape"),
        (np.zeros((8, 8, 3), np.uint8), "too small"),
        (np.full((40, 30, 3), np.nan, np.float32), "NaN"),
        (b"\x89PNG", "expected an image array"),
    ],
)
def test_as_bgr8_rejects_unusable_input_with_a_reason(image: object, message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        as_bgr8(image)


def test_read_image_rejects_empty_and_corrupt_bytes() -> None:
    with pytest.raises(ProbeError, match="empty"):
        read_image(b"")
    with pytest.raises(ProbeError, match="not a readable image"):
        read_image(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    ok, encoded = cv2.imencode(".png", np.full((20, 20), 7, np.uint16))
    assert ok
    decoded = read_image(encoded.tobytes())
    assert decoded.dtype == np.uint16  # 16-bit depth is kept for as_bgr8 to scale
