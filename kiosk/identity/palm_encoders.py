"""Palm encoders found by name: the registry behind `palm.encoder` (kiosk.plugins).

- "compcode": the training-free Gabor competitive code of `kiosk.identity.gabor`, generated as an ONNX
  graph (cached under <models>/derived, keyed by a parameter hash) and run by the encoder runtime.
  Its model_sha256 is the sha256 of the generated ONNX bytes, which are deterministic.
- "onnx": a deployer's trained palm model (CCNet-style, 128x128 gray input, per-image standardised).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from kiosk.config import KioskConfig, PalmOnnxSettings
from kiosk.errors import ModelError, ProbeError
from kiosk.identity.gabor import INPUT_NAME, OUTPUT_NAME, GaborCodeParams, build_onnx, reference_encode
from kiosk.identity.palm_roi import ROI_SIZE
from kiosk.plugins import Registry
from kiosk.runtime import OPENVINO_PRECISION, Backend, Encoder, load_encoder


class RoiEncoder(Protocol):
    """Normalised (N, S, S) uint8 ROIs -> (N, D) float32 unit vectors."""

    name: str
    model_sha256: str
    dimension: int

    def encode(self, rois: np.ndarray) -> np.ndarray: ...


class CompCodeEncoder:
    """The Gabor competitive code as an ONNX graph on OpenVINO or ONNX Runtime."""

    def __init__(self, params: GaborCodeParams, model_path: Path, backend: Backend, threads: int = 0) -> None:
        self.params = params
        self.model_path = model_path
        data = model_path.read_bytes()
        self.model_sha256 = hashlib.sha256(data).hexdigest()
        self.name = f"palm-compcode-{params.key()}"
        self.dimension = params.dimension
        # f32 on purpose: bf16 would move scores away from the calibrated reference (cosine 0.9996 vs 1.0).
        self._encoder: Encoder = load_encoder(model_path, backend=backend, threads=threads, precision="f32")
        self.backend = self._encoder.backend

    def encode(self, rois: np.ndarray) -> np.ndarray:
        batch = rois.astype(np.float32)[:, None]
        return self._encoder.run({INPUT_NAME: batch})[OUTPUT_NAME].astype(np.float32)


class ReferenceCompCodeEncoder:
    """The same code in numpy/OpenCV (no ONNX): for agreement tests and the speed comparison."""

    backend = "numpy"

    def __init__(self, params: GaborCodeParams, model_sha256: str = "") -> None:
        self.params = params
        self.name = f"palm-compcode-{params.key()}-reference"
        self.model_sha256 = model_sha256 or hashlib.sha256(build_onnx(params)).hexdigest()
        self.dimension = params.dimension

    def encode(self, rois: np.ndarray) -> np.ndarray:
        return np.stack([reference_encode(roi, self.params) for roi in rois]).astype(np.float32)


class TrainedOnnxEncoder:
    """A trained palm ONNX (e.g. CCNet exported): (N, C, H, W) float input, first output is the feature."""

    def __init__(
        self, model_path: Path, backend: Backend, threads: int = 0, precision: str = OPENVINO_PRECISION
    ) -> None:
        if not model_path.is_file():
            raise ModelError(f"palm ONNX model {model_path} does not exist", "set palm.onnx.model_path to a file")
        data = model_path.read_bytes()
        self.model_sha256 = hashlib.sha256(data).hexdigest()
        self.name = f"palm-onnx-{model_path.stem}"
        self.model_path = model_path
        self._channels, self._size = _input_layout(data, model_path)
        self._encoder: Encoder = load_encoder(model_path, backend=backend, threads=threads, precision=precision)
        self.backend = self._encoder.backend
        probe = self._run(np.full((1, self._size, self._size), 128, dtype=np.uint8))
        self.dimension = int(probe.shape[1])

    def encode(self, rois: np.ndarray) -> np.ndarray:
        vectors = self._run(rois)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(vectors)) or np.any(norms < 1e-12):
            raise ProbeError("the palm model produced an unusable vector (zero or NaN)", "check the model file")
        return (vectors / norms).astype(np.float32)

    def _run(self, rois: np.ndarray) -> np.ndarray:
        if rois.shape[1:] != (self._size, self._size):
            rois = np.stack([cv2.resize(roi, (self._size, self._size), interpolation=cv2.INTER_AREA) for roi in rois])
        batch = rois.astype(np.float32)
        mean = batch.mean(axis=(1, 2), keepdims=True)
        std = batch.std(axis=(1, 2), keepdims=True)
        batch = ((batch - mean) / np.maximum(std, 1e-6))[:, None]
        if self._channels == 3:
            batch = np.repeat(batch, 3, axis=1)
        outputs = self._encoder.run({self._encoder.input_names[0]: batch})
        return outputs[self._encoder.output_names[0]].reshape(len(rois), -1).astype(np.float32)


def _input_layout(data: bytes, path: Path) -> tuple[int, int]:
    """(channels, side) of an NCHW image input; 1 channel and 128 px when the model leaves them dynamic."""
    import onnx

    try:
        model = onnx.load_from_string(data)
    except Exception as exc:  # onnx raises DecodeError and friends for a file that is not ONNX
        raise ModelError(f"{path} is not a readable ONNX model ({exc})", "set palm.onnx.model_path to an ONNX") from exc
    initializers = {init.name for init in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initializers]
    if len(inputs) != 1:
        raise ModelError(f"{path} has {len(inputs)} inputs; a palm model takes one image", "export with one input")
    dims = [d.dim_value if d.HasField("dim_value") else 0 for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) != 4 or dims[1] not in (0, 1, 3):
        raise ModelError(f"{path} input shape {dims} is not (N, 1|3, H, W)", "export an NCHW gray or RGB model")
    return dims[1] or 1, dims[2] or 128


def compcode_model_path(config: KioskConfig, params: GaborCodeParams) -> Path:
    """The generated ONNX graph in the model cache, (re)written when missing or different."""
    data = build_onnx(params)
    path = config.paths.models / "derived" / f"palm-compcode-{params.key()}" / "palm_compcode.onnx"
    if path.is_file() and path.read_bytes() == data:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".palm_compcode.", delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, path)
    return path


def compcode_params() -> GaborCodeParams:
    return GaborCodeParams(roi_size=ROI_SIZE)


PALM_ENCODERS: Registry[RoiEncoder] = Registry("palm encoder", "palm.encoder")


@PALM_ENCODERS.register("compcode", summary="Training-free Gabor competitive code, generated as an ONNX graph.")
def compcode_encoder(config: KioskConfig, backend: Backend) -> RoiEncoder:
    params = compcode_params()
    return CompCodeEncoder(params, compcode_model_path(config, params), backend, config.runtime.threads)


@PALM_ENCODERS.register("onnx", settings=PalmOnnxSettings, summary="A trained palm ONNX (palm.onnx.model_path).")
def trained_onnx_encoder(config: KioskConfig, backend: Backend) -> RoiEncoder:
    path = config.palm.onnx.model_path
    if path is None:
        raise ModelError("palm.encoder is 'onnx' but palm.onnx.model_path is not set", "set the model path")
    return TrainedOnnxEncoder(path, backend, config.runtime.threads)
