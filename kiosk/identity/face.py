"""The face pipeline: frame -> faces (box, landmarks, quality) -> requester -> embedding.

Images are OpenCV-style: BGR (or single-channel gray), uint8 or uint16 (or float in [0, 1]).
Detection runs on a copy downscaled to DETECT_MAX_SIDE; crops come from the full-res frame.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.align import landmark_box
from kiosk.identity.detect import Detector, FaceDetection, create_detector
from kiosk.identity.embedders import CropEmbedder, load_crop_embedder
from kiosk.identity.image_files import decode_image
from kiosk.identity.quality import TOO_SMALL, QualityVerdict, assess
from kiosk.models import ModelStore

MIN_IMAGE_SIDE = 16
# Region (in eye-mouth distances around the landmark box) cut out before alignment: enough for the
# largest FaceNet margin and a rotated ArcFace warp, so a 4K frame is never converted whole.
ROI_MARGIN = 3.0
# Frames are downscaled to this longest side for detection; crops stay full-resolution.
DETECT_MAX_SIDE = 960
# Embed the face and its mirror image and sum both (test-time augmentation).
FLIP_AUGMENT = True


# ---- image input ---------------------------------------------------------------------------------


def read_image(source: Path | bytes) -> np.ndarray:
    """Decode an image file or its bytes, keeping 16-bit depth; ProbeError when it is not an image."""
    if isinstance(source, Path):
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise ProbeError(f"cannot read image {source}: {exc.strerror or exc}", "check the path") from exc
        label = str(source)
    else:
        data, label = source, "image"
    if not data:
        raise ProbeError(f"{label} is empty (0 bytes)", "give a JPEG/PNG/BMP photo")
    image = decode_image(data, label)  # ImageTooLarge before decoding
    if image is None:
        raise ProbeError(f"{label} is not a readable image (corrupt or unknown format)", "give a JPEG/PNG/BMP photo")
    return image


def as_bgr8(image: object) -> np.ndarray:
    """Any reasonable image array as contiguous BGR uint8; ProbeError with the reason otherwise."""
    if not isinstance(image, np.ndarray):
        raise ProbeError(f"expected an image array, got {type(image).__name__}", "pass a decoded image")
    if image.size == 0:
        raise ProbeError("the image is empty (no pixels)", "check the camera or the file")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (3, 4)):
        raise ProbeError(f"unsupported image shape {image.shape}", "give a gray, BGR or BGRA image")
    if min(image.shape[:2]) < MIN_IMAGE_SIDE:
        raise ProbeError(f"image too small ({image.shape[1]}x{image.shape[0]})", "give a larger photo")
    if image.dtype == np.uint8:
        converted = image
    elif image.dtype == np.uint16:
        converted = (image.astype(np.float32) / 257.0 + 0.5).astype(np.uint8)
    elif np.issubdtype(image.dtype, np.floating):
        if not np.isfinite(image).all():
            raise ProbeError("the image contains NaN or infinite values", "check the capture")
        scale = 255.0 if float(image.max()) <= 1.0 else 1.0
        converted = np.clip(image * scale + 0.5, 0, 255).astype(np.uint8)
    elif image.dtype == np.bool_ or np.issubdtype(image.dtype, np.integer):
        converted = np.clip(image, 0, 255).astype(np.uint8)
    else:
        raise ProbeError(f"unsupported pixel type {image.dtype}", "give an 8- or 16-bit image")
    if converted.ndim == 2:
        return cv2.cvtColor(converted, cv2.COLOR_GRAY2BGR)
    if converted.shape[2] == 4:
        return cv2.cvtColor(converted, cv2.COLOR_BGRA2BGR)
    return np.ascontiguousarray(converted)


# ---- analysis results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FaceObservation:
    detection: FaceDetection
    quality: QualityVerdict
    prominence: float  # size weighted by closeness to the frame centre; the requester has the largest


@dataclass(frozen=True)
class FaceAnalysis:
    faces: tuple[FaceObservation, ...]
    requester_index: int | None  # index into faces of the face the kiosk serves
    second_face_in_view: bool  # another face big enough to see the screen: hide personal memory
    embedding: np.ndarray | None  # L2-normalised embedding of the requester
    reason: str  # why there is no requester/embedding ("" when there is)
    frame_size: tuple[int, int]  # width, height
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def requester(self) -> FaceObservation | None:
        return None if self.requester_index is None else self.faces[self.requester_index]

    @property
    def faces_in_view(self) -> int:
        """Faces big enough to count (passing the size gate), whatever their other quality."""
        return _count_in_view(self.faces)


# ---- the pipeline --------------------------------------------------------------------------------


class FacePipeline:
    def __init__(
        self,
        config: KioskConfig,
        detector: Detector | None = None,
        embedder: CropEmbedder | None = None,
        store: ModelStore | None = None,
    ) -> None:
        store = store or ModelStore(config.paths.models)
        self.min_face_px = config.face.min_face_px
        self.detector = detector or create_detector(config, store)
        self.embedder = embedder or load_crop_embedder(config, store)

    def detect(self, bgr: np.ndarray) -> list[FaceDetection]:
        """Faces in a BGR uint8 frame, in full-resolution coordinates."""
        height, width = bgr.shape[:2]
        scale = min(1.0, DETECT_MAX_SIDE / max(height, width))
        small = bgr if scale == 1.0 else cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        found = self.detector.detect(cv2.cvtColor(small, cv2.COLOR_BGR2RGB))
        return [face if scale == 1.0 else face.scaled(1.0 / scale) for face in found]

    def analyse(self, frame: object, embed: bool = True) -> FaceAnalysis:
        """Every face with its quality verdict, the requester, and the requester's embedding."""
        started = time.perf_counter()
        bgr = as_bgr8(frame)
        height, width = bgr.shape[:2]
        timings: dict[str, float] = {}
        mark = time.perf_counter()
        detections = self.detect(bgr)
        timings["detect"] = _ms_since(mark)

        mark = time.perf_counter()
        faces = tuple(
            FaceObservation(d, assess(bgr, d, self.min_face_px), _prominence(d, width, height)) for d in detections
        )
        timings["quality"] = _ms_since(mark)

        passing = [i for i, face in enumerate(faces) if face.quality.passed]
        requester = max(passing, key=lambda i: faces[i].prominence) if passing else None
        second_face = _count_in_view(faces) >= 2
        reason = "" if requester is not None else _no_requester_reason(faces)

        embedding = None
        if embed and requester is not None:
            mark = time.perf_counter()
            crop = self.align(bgr, faces[requester].detection)
            timings["align"] = _ms_since(mark)
            mark = time.perf_counter()
            embedding = self.embed_aligned([crop])[0]
            timings["embed"] = _ms_since(mark)
        timings["total"] = _ms_since(started)
        return FaceAnalysis(faces, requester, second_face, embedding, reason, (width, height), timings)

    def align(self, bgr: np.ndarray, detection: FaceDetection) -> np.ndarray:
        """The model-ready RGB crop of one face; only the region around it is colour-converted."""
        x, y, w, h = landmark_box(detection.landmarks, ROI_MARGIN)
        height, width = bgr.shape[:2]
        x1, y1 = max(int(x), 0), max(int(y), 0)
        x2, y2 = min(int(np.ceil(x + w)), width), min(int(np.ceil(y + h)), height)
        if x2 - x1 < 2 or y2 - y1 < 2:
            x1, y1, x2, y2 = 0, 0, width, height
        region = cv2.cvtColor(bgr[y1:y2, x1:x2], cv2.COLOR_BGR2RGB)
        return self.embedder.crop(region, detection.landmarks - np.array([x1, y1], dtype=np.float32))

    def embed_aligned(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """Embeddings of model-ready RGB crops, with the mirror image added (FLIP_AUGMENT)."""
        vectors = self.embedder.embed_crops(crops)
        if FLIP_AUGMENT:
            vectors = vectors + self.embedder.embed_crops([np.ascontiguousarray(np.flip(c, axis=-2)) for c in crops])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_precropped(self, image: object) -> np.ndarray:
        """Embedding of a face that is already a tight crop (LFW, a gallery photo): no detection.

        The crop gets the model's expected margin by reflecting its borders, then is resized.
        """
        rgb = cv2.cvtColor(as_bgr8(image), cv2.COLOR_BGR2RGB)
        return self.embed_aligned([self.embedder.crop_precropped(rgb)])[0]


def _count_in_view(faces: tuple[FaceObservation, ...]) -> int:
    # A bystander who is blurred, turned or dim can still read the screen: only size counts here.
    return sum(1 for face in faces if TOO_SMALL not in face.quality.reasons)


def _ms_since(mark: float) -> float:
    return (time.perf_counter() - mark) * 1000.0


def _prominence(detection: FaceDetection, width: int, height: int) -> float:
    centre_x, centre_y = detection.centre
    offset = np.hypot((centre_x - width / 2) / (width / 2), (centre_y - height / 2) / (height / 2)) / np.sqrt(2)
    return detection.side * (1.0 - 0.5 * float(min(offset, 1.0)))


def _no_requester_reason(faces: tuple[FaceObservation, ...]) -> str:
    if not faces:
        return "no face found"
    best = max(faces, key=lambda face: face.prominence)
    return best.quality.describe()


# ---- the embedder object used by enrollment, calibration and evaluation ------------------------


class FaceEmbedder:
    """Face embeddings under the interface shared with the palm embedder (see CONTRACTS.md)."""

    modality: Literal["face"] = "face"

    def __init__(self, pipeline: FacePipeline) -> None:
        self.pipeline = pipeline
        self.name = pipeline.embedder.name
        self.model_sha256 = pipeline.embedder.model_sha256
        self.dimension = pipeline.embedder.dimension

    def analyse(self, frame: object) -> FaceAnalysis:
        return self.pipeline.analyse(frame)

    def embed_image(self, image: object) -> np.ndarray:
        """Full pipeline on a photo or frame: the requester's embedding, or ProbeError saying why not."""
        analysis = self.pipeline.analyse(image)
        if analysis.embedding is None:
            raise ProbeError(f"no usable face: {analysis.reason}", "face the camera in good light")
        return analysis.embedding

    def embed_enrollment_sample(self, image: object, precropped: bool = False) -> np.ndarray:
        """An enrollment sample's embedding; ProbeError when it shows more than one face, since which one would
        become the person's template is then a guess (two people side by side once enrolled as a third name)."""
        if precropped:
            faces = self.pipeline.analyse(_framed_for_detection(as_bgr8(image)), embed=False).faces_in_view
            if faces > 1:
                raise ProbeError(f"{faces} faces in one crop", "enroll from crops that show only this person")
            return self.embed_crop(image)
        analysis = self.pipeline.analyse(image)
        if analysis.faces_in_view > 1:
            raise ProbeError(
                f"{analysis.faces_in_view} faces in the image", "enroll from images that show only this person"
            )
        if analysis.embedding is None:
            raise ProbeError(f"no usable face: {analysis.reason}", "face the camera in good light")
        return analysis.embedding

    def embed_images(self, images: Sequence[object]) -> np.ndarray:
        return _stack([self.embed_image(image) for image in images], self.dimension)

    def embed_crop(self, image: object) -> np.ndarray:
        """A pre-cropped tight face (benchmark crops): no detection, reflected margin, same model."""
        return self.pipeline.embed_precropped(image)

    def embed_crops(self, images: Sequence[object]) -> np.ndarray:
        return _stack([self.embed_crop(image) for image in images], self.dimension)


def _framed_for_detection(bgr: np.ndarray, min_side: int = 240) -> np.ndarray:
    """A tight crop enlarged and set in a plain border, so the detector sees each face in it whole."""
    scale = max(1.0, min_side / max(bgr.shape[:2]))
    if scale > 1.0:
        bgr = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    border = max(bgr.shape[:2]) // 3
    return cv2.copyMakeBorder(bgr, border, border, border, border, cv2.BORDER_CONSTANT, value=(128, 128, 128))


def _stack(vectors: list[np.ndarray], dimension: int) -> np.ndarray:
    return np.stack(vectors).astype(np.float32) if vectors else np.empty((0, dimension), dtype=np.float32)


def load_face_embedder(config: KioskConfig, store: ModelStore | None = None) -> FaceEmbedder:
    return FaceEmbedder(FacePipeline(config, store=store))
