"""A deployer's ArcFace-style ONNX model (112x112 five-point-aligned crops) through ONNX Runtime.

Takes NCHW or NHWC float input (detected from the graph), RGB normalised (x - 127.5) / 127.5 as
the insightface models are trained; any embedding size.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import ModelError
from kiosk.identity.align import PRECROPPED_MARGIN, PRECROPPED_MARGIN_X, align_five_point, pad_precropped, resize
from kiosk.models.store import sha256_file
from kiosk.runtime import Encoder, load_encoder

INPUT_SIZE = 112


def _graph_shapes(path: Path) -> tuple[str, list[int | str], list[int | str]]:
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError and friends for a corrupt file
        raise ModelError(f"{path} is not a readable ONNX model: {exc}", "check face.arcface.model_path") from exc
    initialisers = {init.name for init in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initialisers]
    if len(inputs) != 1 or not model.graph.output:
        raise ModelError(f"{path} must have one image input and an embedding output", "use an ArcFace-style ONNX")

    def dims(value: object) -> list[int | str]:
        shape = value.type.tensor_type.shape.dim  # type: ignore[attr-defined]
        return [d.dim_value if d.dim_value else (d.dim_param or "?") for d in shape]

    return inputs[0].name, dims(inputs[0]), dims(model.graph.output[0])


class ArcFaceOnnxEmbedder:
    input_size = INPUT_SIZE

    def __init__(
        self,
        path: Path,
        encoder: Encoder,
        input_name: str,
        channels_first: bool,
        dimension: int,
        precropped_margin: float = PRECROPPED_MARGIN,
        precropped_margin_x: float | None = PRECROPPED_MARGIN_X,
    ) -> None:
        self.name = f"arcface-onnx:{path.name}"
        self.model_sha256 = sha256_file(path)
        self._encoder = encoder
        self._input = input_name
        self._channels_first = channels_first
        self.dimension = dimension
        self.precropped_margin = precropped_margin
        self.precropped_margin_x = precropped_margin_x

    def crop(self, rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        return align_five_point(rgb, landmarks, INPUT_SIZE)

    def crop_precropped(self, rgb: np.ndarray) -> np.ndarray:
        return resize(pad_precropped(rgb, self.precropped_margin, self.precropped_margin_x), INPUT_SIZE)

    def embed_crops(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        if not crops:
            return np.empty((0, self.dimension), dtype=np.float32)
        batch = (np.stack(crops).astype(np.float32) - 127.5) / 127.5
        if self._channels_first:
            batch = batch.transpose(0, 3, 1, 2)
        out = self._encoder.run({self._input: np.ascontiguousarray(batch)})
        vectors = np.asarray(out[self._encoder.output_names[0]], dtype=np.float32).reshape(len(crops), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


def load_arcface(config: KioskConfig) -> ArcFaceOnnxEmbedder:
    path = config.face.arcface.model_path
    if path is None:
        raise ModelError(
            "face.embedder is 'arcface-onnx' but face.arcface.model_path is not set",
            "set face.arcface.model_path to the ONNX file",
        )
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelError(f"ArcFace model {path} does not exist", "check face.arcface.model_path")
    input_name, input_dims, output_dims = _graph_shapes(path)
    if len(input_dims) != 4 or 3 not in (input_dims[1], input_dims[3]):
        raise ModelError(f"{path.name}: input shape {input_dims} is not an image batch", "use an ArcFace-style ONNX")
    channels_first = input_dims[1] == 3
    spatial = input_dims[2:4] if channels_first else input_dims[1:3]
    if any(isinstance(d, int) and d != INPUT_SIZE for d in spatial):
        raise ModelError(
            f"{path.name}: input is {spatial}, expected {INPUT_SIZE}x{INPUT_SIZE}", "use a 112x112 ArcFace-style model"
        )
    encoder = load_encoder(path, backend="onnxruntime", threads=config.runtime.threads)
    dimension = output_dims[-1] if output_dims and isinstance(output_dims[-1], int) else 0
    if not dimension:
        probe = np.full((1, INPUT_SIZE, INPUT_SIZE, 3), 127, dtype=np.uint8)
        batch = (probe.astype(np.float32) - 127.5) / 127.5
        feed = batch.transpose(0, 3, 1, 2) if channels_first else batch
        dimension = int(np.asarray(encoder.run({input_name: feed})[encoder.output_names[0]]).size)
    return ArcFaceOnnxEmbedder(path, encoder, input_name, channels_first, int(dimension))
