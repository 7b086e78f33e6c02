"""Palm region of interest: hand landmarks -> a rotation-normalised square of the central palm.

MediaPipe's HandLandmarker (Tasks API) gives 21 landmarks. The ROI is the square just below the line
through the index (5) and pinky (17) knuckles, on the wrist side, rotated so that line is horizontal,
resampled to ROI_SIZE gray pixels and contrast-normalised with CLAHE. Each refusal carries a reason
(ProbeError): a template must never be made silently from a bad image.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from kiosk.errors import ModelError, ProbeError

WRIST, INDEX_MCP, MIDDLE_MCP, RING_MCP, PINKY_MCP = 0, 5, 9, 13, 17
FINGERS = ((INDEX_MCP, 8), (MIDDLE_MCP, 12), (RING_MCP, 16), (PINKY_MCP, 20))  # (knuckle, tip)

ROI_GAP = 0.1
"""Gap between the knuckle line and the ROI's top edge, as a fraction of the knuckle distance."""
ROI_SCALE = 1.0
"""ROI side as a multiple of the index-to-pinky knuckle distance: the central palm, clear of the fingers."""
BACKGROUND_GRAY = 40
"""Gray level below which an ROI pixel is background (outside the lit hand), not palm skin."""
CLAHE_CLIP = 2.0
CLAHE_TILES = (8, 8)
ROI_SIZE = 128
"""Side of the normalised palm ROI in pixels."""
HAND_CONFIDENCE = 0.5
"""MediaPipe hand detection and presence confidence needed to accept a hand."""

# Quality gates: each refusal names the gate and its value.
MIN_IMAGE_PX = 64  # smallest image side accepted as a palm image
MIN_PALM_PX = 48.0  # smallest index-to-pinky knuckle distance of a full-hand image
MIN_FINGER_EXTENSION = 1.45  # open hand: mean over four fingers of tip-to-wrist / knuckle-to-wrist distance
MIN_SHARPNESS = 5.0  # Laplacian variance of the ROI before contrast normalisation
MIN_BRIGHTNESS = 40.0  # mean gray level of the ROI
MIN_CONTRAST = 4.0  # gray-level standard deviation of the ROI
# Largest share of background (near-black) ROI pixels: a crop that slipped off the palm. Of Tongji's 907 ROIs it
# refuses the 3 failed crops; the others have at most 4 % (small wedges from the ROI rotation). 1 turns it off.
MAX_BACKGROUND_FRACTION = 0.10


@dataclass(frozen=True)
class HandLandmarks:
    points: np.ndarray  # (21, 2) float64 pixel coordinates (x, y)
    score: float


@dataclass(frozen=True)
class PalmRoi:
    roi: np.ndarray  # (S, S) uint8, CLAHE-normalised
    landmarks: HandLandmarks | None
    sharpness: float
    brightness: float


# ---- pure geometry -------------------------------------------------------------------------------
def finger_extension(points: np.ndarray) -> np.ndarray:
    """Per finger (index..pinky): tip-to-wrist over knuckle-to-wrist distance; ~1.6-2 open, < 1.2 curled."""
    wrist = points[WRIST]
    return np.array(
        [
            np.linalg.norm(points[tip] - wrist) / max(float(np.linalg.norm(points[knuckle] - wrist)), 1e-6)
            for knuckle, tip in FINGERS
        ]
    )


def palm_roi_corners(points: np.ndarray) -> np.ndarray:
    """(3, 2) source points of the ROI's top-left, top-right and bottom-left corners in the image.

    x runs from the index knuckle towards the pinky knuckle, y from the knuckle line towards the wrist,
    so the ROI is upright (fingers up) whatever the hand's rotation in the image.
    """
    index, pinky, wrist = points[INDEX_MCP], points[PINKY_MCP], points[WRIST]
    baseline = pinky - index
    length = float(np.linalg.norm(baseline))
    if length < 1e-6:
        raise ProbeError("hand landmarks are degenerate", "show the open palm to the scanner")
    along = baseline / length
    down = np.array([-along[1], along[0]])
    middle = (index + pinky) / 2
    if float(np.dot(down, wrist - middle)) < 0:
        down = -down
    side = ROI_SCALE * length
    top_left = middle + down * ROI_GAP * length - along * side / 2
    return np.stack([top_left, top_left + along * side, top_left + down * side])


def crop_palm_roi(gray: np.ndarray, points: np.ndarray, roi_size: int) -> np.ndarray:
    """Warp the palm square into an upright (roi_size, roi_size) gray image (not yet contrast-normalised)."""
    source = palm_roi_corners(points).astype(np.float32)
    target = np.array([[0, 0], [roi_size, 0], [0, roi_size]], dtype=np.float32)
    matrix = cv2.getAffineTransform(source, target)
    return cv2.warpAffine(gray, matrix, (roi_size, roi_size), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE)


# ---- image helpers -----------------------------------------------------------------------------
def to_gray(image: np.ndarray) -> np.ndarray:
    """uint8 gray from gray, BGR or BGRA (OpenCV order) input, 8-bit, 16-bit or float in [0, 1]."""
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 3 and image.shape[2] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    elif image.ndim == 3 and image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2GRAY)
    elif image.ndim != 2:
        raise ProbeError(f"unsupported image shape {image.shape}", "give a gray or BGR image")
    return to_uint8(image)


def to_uint8(image: np.ndarray) -> np.ndarray:
    if image.dtype == np.uint8:
        return image
    if image.dtype == np.uint16:
        return (image.astype(np.float32) / 257.0 + 0.5).astype(np.uint8)
    if np.issubdtype(image.dtype, np.floating):
        if not np.isfinite(image).all():
            raise ProbeError("the palm image contains NaN or infinite values", "check the capture")
        scale = 255.0 if float(image.max()) <= 1.0 else 1.0
        return np.clip(image * scale + 0.5, 0, 255).astype(np.uint8)
    if np.issubdtype(image.dtype, np.integer) or image.dtype == np.bool_:
        return np.clip(image, 0, 255).astype(np.uint8)
    raise ProbeError(f"unsupported pixel type {image.dtype}", "give an 8- or 16-bit image")


def check_image(image: object) -> np.ndarray:
    """Validate the array itself; returns it as an ndarray."""
    if not isinstance(image, np.ndarray) or image.size == 0:
        raise ProbeError("palm image is empty or not an image array", "give a decoded image (numpy array)")
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (1, 3, 4)):
        raise ProbeError(f"unsupported image shape {image.shape}", "give a gray, BGR or BGRA image")
    if min(image.shape[:2]) < MIN_IMAGE_PX:
        raise ProbeError(
            f"palm image is too small ({image.shape[1]}x{image.shape[0]} px, need at least {MIN_IMAGE_PX})",
            "use a closer or higher-resolution capture",
        )
    return image


def roi_quality(roi: np.ndarray, max_background_fraction: float = MAX_BACKGROUND_FRACTION) -> tuple[float, float]:
    """Refuse a dark, off-palm, featureless or blurred ROI; returns (sharpness, brightness)."""
    brightness = float(roi.mean())
    if brightness < MIN_BRIGHTNESS:
        raise ProbeError(
            f"palm image is too dark (mean gray {brightness:.0f} < {MIN_BRIGHTNESS:.0f})",
            "add light or move the hand onto the scanner",
        )
    background = float(np.mean(roi < BACKGROUND_GRAY))
    if background > max_background_fraction:
        raise ProbeError(
            f"palm does not fill the image ({background:.0%} background, at most {max_background_fraction:.0%})",
            "centre the open palm over the scanner",
        )
    contrast = float(roi.std())
    if contrast < MIN_CONTRAST:
        raise ProbeError(
            f"palm image has no texture (gray std {contrast:.1f} < {MIN_CONTRAST:.1f})",
            "show the palm, not a blank or saturated surface",
        )
    sharpness = float(cv2.Laplacian(roi, cv2.CV_64F).var())
    if sharpness < MIN_SHARPNESS:
        raise ProbeError(
            f"palm image is blurred (sharpness {sharpness:.1f} < {MIN_SHARPNESS:.1f})",
            "hold the hand still and in focus",
        )
    return sharpness, brightness


def normalise_roi(gray_roi: np.ndarray) -> np.ndarray:
    """CLAHE contrast normalisation applied to every ROI, cropped here or by a scanner."""
    return np.asarray(cv2.createCLAHE(clipLimit=CLAHE_CLIP, tileGridSize=CLAHE_TILES).apply(gray_roi))


def prepare_roi(image: np.ndarray, max_background_fraction: float = MAX_BACKGROUND_FRACTION) -> PalmRoi:
    """A pre-cropped ROI (scanner or benchmark): gray, resize to ROI_SIZE, quality gates, CLAHE."""
    gray = to_gray(check_image(image))
    size = ROI_SIZE
    if gray.shape != (size, size):
        interpolation = cv2.INTER_AREA if min(gray.shape) >= size else cv2.INTER_LINEAR
        gray = cv2.resize(gray, (size, size), interpolation=interpolation)
    sharpness, brightness = roi_quality(gray, max_background_fraction)
    return PalmRoi(normalise_roi(gray), None, sharpness, brightness)


# ---- landmarks -----------------------------------------------------------------------------------
class PalmRoiExtractor:
    """Full hand image -> PalmRoi, through MediaPipe HandLandmarker (created once, used under a lock)."""

    def __init__(self, model_path: Path) -> None:
        from mediapipe.tasks.python import BaseOptions, vision

        options = vision.HandLandmarkerOptions(
            base_options=BaseOptions(model_asset_path=str(model_path)),
            running_mode=vision.RunningMode.IMAGE,
            num_hands=2,
            min_hand_detection_confidence=HAND_CONFIDENCE,
            min_hand_presence_confidence=HAND_CONFIDENCE,
        )
        try:
            self._landmarker: Any = vision.HandLandmarker.create_from_options(options)
        except Exception as exc:  # MediaPipe raises plain exceptions for unusable models
            raise ModelError(f"MediaPipe cannot load {model_path}: {exc}", "run `kiosk models pull`") from exc
        self._lock = threading.Lock()
        # MediaPipe's own __del__ fails at interpreter shutdown; close while its runtime is alive.
        self._finalizer = weakref.finalize(self, _close_quietly, self._landmarker)

    def landmarks(self, image: np.ndarray) -> list[HandLandmarks]:
        """All hands found in a BGR (or gray) image, in pixel coordinates."""
        import mediapipe as mp

        if image.ndim == 2:
            rgb = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
        elif image.shape[2] == 4:
            rgb = cv2.cvtColor(image, cv2.COLOR_BGRA2RGB)
        else:
            rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
        height, width = rgb.shape[:2]
        with self._lock:
            result = self._landmarker.detect(mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(rgb)))
        hands = []
        for marks, handedness in zip(result.hand_landmarks, result.handedness, strict=True):
            points = np.array([[mark.x * width, mark.y * height] for mark in marks], dtype=np.float64)
            hands.append(HandLandmarks(points, float(handedness[0].score) if handedness else 0.0))
        return hands

    def extract(self, image: np.ndarray) -> PalmRoi:
        image = check_image(image)
        image = to_uint8(image[:, :, 0] if image.ndim == 3 and image.shape[2] == 1 else image)
        hands = self.landmarks(image)
        if not hands:
            raise ProbeError(
                "no hand found in the palm image",
                "hold an open hand, palm towards the scanner (a pre-cropped palm ROI needs --roi / embed_roi)",
            )
        if len(hands) > 1:
            raise ProbeError("more than one hand in view", "show one hand at a time")
        hand = hands[0]
        check_open_hand(hand.points)
        gray = to_gray(image)
        roi = crop_palm_roi(gray, hand.points, ROI_SIZE)
        # Judge focus at the camera's own resolution: upsampling a small palm would read as blur.
        native_side = round(ROI_SCALE * knuckle_span(hand.points))
        at_native = roi if native_side >= ROI_SIZE else crop_palm_roi(gray, hand.points, native_side)
        sharpness, brightness = roi_quality(at_native)
        return PalmRoi(normalise_roi(roi), hand, sharpness, brightness)

    def close(self) -> None:
        self._finalizer()


def _close_quietly(landmarker: Any) -> None:
    try:
        landmarker.close()
    except Exception:  # already closed, or MediaPipe's dispatcher is gone at interpreter exit
        landmarker._handle = None  # so MediaPipe's own __del__ does not retry and print a traceback


def knuckle_span(points: np.ndarray) -> float:
    """Distance in pixels between the index and pinky knuckles."""
    return float(np.linalg.norm(points[PINKY_MCP] - points[INDEX_MCP]))


def check_open_hand(points: np.ndarray) -> None:
    """Refuse a palm too far away, or a hand that is not open and flat towards the camera."""
    span = knuckle_span(points)
    if span < MIN_PALM_PX:
        raise ProbeError(
            f"hand is too small in the image (knuckle span {span:.0f} px < {MIN_PALM_PX:.0f})",
            "move the hand closer to the scanner",
        )
    extension = finger_extension(points)
    if float(extension.mean()) < MIN_FINGER_EXTENSION:
        raise ProbeError(
            f"hand is not open (finger extension {extension.mean():.2f} < {MIN_FINGER_EXTENSION:.2f})",
            "open the hand and spread the fingers flat",
        )
    palm_length = float(np.linalg.norm(points[MIDDLE_MCP] - points[WRIST]))
    if span < 0.4 * palm_length:
        raise ProbeError(
            "hand is turned sideways (knuckle span too short for the palm length)",
            "turn the palm flat towards the scanner",
        )
