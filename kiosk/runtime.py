"""One small interface that runs an encoder on OpenVINO or ONNX Runtime.

Face, palm and text encoders all go through `load_encoder`; the backend is a config string.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from kiosk.errors import ModelError

Backend = Literal["openvino", "onnxruntime"]
# OpenVINO's inference precision hint: "auto" runs bf16 where the CPU has it, f32 elsewhere.
OPENVINO_PRECISION = "auto"


class Encoder(Protocol):
    """A loaded model: named inputs in, named outputs out, numpy arrays both ways."""

    backend: str
    input_names: list[str]
    output_names: list[str]

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


class OnnxRuntimeEncoder:
    backend = "onnxruntime"

    def __init__(self, model: Path | bytes, threads: int = 0, outputs: Sequence[str] | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        options.log_severity_level = 3
        source = model if isinstance(model, bytes) else str(model)
        try:
            self._session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for corrupt files
            raise ModelError(
                f"ONNX Runtime cannot load {model if isinstance(model, Path) else 'model'}: {exc}",
                "re-pull the model with `kiosk models pull`",
            ) from exc
        self.input_names = [i.name for i in self._session.get_inputs()]
        self.output_names = list(outputs) if outputs else [o.name for o in self._session.get_outputs()]

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {name: inputs[name] for name in self.input_names if name in inputs}
        values = self._session.run(self.output_names, feed)
        return {name: np.asarray(value) for name, value in zip(self.output_names, values, strict=True)}


class OpenVinoEncoder:
    backend = "openvino"

    def __init__(
        self,
        model: Path | Any,
        threads: int = 0,
        outputs: Sequence[str] | None = None,
        precision: str = OPENVINO_PRECISION,
        reshape: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        import openvino as ov

        core = ov.Core()
        try:
            ov_model = core.read_model(str(model)) if isinstance(model, Path) else model
            if reshape:
                ov_model.reshape({name: ov.PartialShape(list(shape)) for name, shape in reshape.items()})
            config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY"}
            if threads:
                config["INFERENCE_NUM_THREADS"] = threads
            if precision != "auto":
                config["INFERENCE_PRECISION_HINT"] = precision
            self._compiled = core.compile_model(ov_model, "CPU", config)
        except Exception as exc:  # OpenVINO raises RuntimeError subclasses for corrupt files
            raise ModelError(
                f"OpenVINO cannot load {model if isinstance(model, Path) else 'model'}: {exc}",
                "re-pull the model with `kiosk models pull`",
            ) from exc
        self.input_names = [port.get_any_name() for port in self._compiled.inputs]
        all_outputs = [port.get_any_name() for port in self._compiled.outputs]
        self.output_names = list(outputs) if outputs else all_outputs
        self._request = self._compiled.create_infer_request()
        # One infer request serves every caller: the verifier thread and an enrollment may embed at once.
        self._lock = threading.Lock()

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {name: inputs[name] for name in self.input_names if name in inputs}
        with self._lock:
            result = self._request.infer(feed)
            return {name: np.array(result[self._compiled.output(name)]) for name in self.output_names}


def load_encoder(
    model: Path | bytes,
    backend: Backend = "openvino",
    threads: int = 0,
    outputs: Sequence[str] | None = None,
    precision: str = OPENVINO_PRECISION,
) -> Encoder:
    """Load an ONNX (either backend) or OpenVINO IR `.xml` (OpenVINO only) model."""
    if isinstance(model, Path) and not model.exists():
        raise ModelError(f"model file {model} does not exist", "run `kiosk models pull`")
    if backend == "onnxruntime":
        if isinstance(model, Path) and model.suffix == ".xml":
            raise ModelError(f"{model} is an OpenVINO IR", "use runtime.backend = 'openvino' for this model")
        return OnnxRuntimeEncoder(model, threads=threads, outputs=outputs)
    if backend == "openvino":
        if isinstance(model, bytes):
            # OpenVINO's ONNX frontend reads files; the model is fully loaded before the file goes away.
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.onnx"
                path.write_bytes(model)
                return OpenVinoEncoder(path, threads=threads, outputs=outputs, precision=precision)
        return OpenVinoEncoder(model, threads=threads, outputs=outputs, precision=precision)
    raise ModelError(f"unknown encoder backend '{backend}'", "use 'openvino' or 'onnxruntime'")


def unit_embeddings(
    encoder: Encoder, feeds: Sequence[np.ndarray], input_name: str, output_name: str, dimension: int
) -> np.ndarray:
    """(n, dimension) L2-normalised outputs of `encoder` run once per feed, for graphs fixed at batch 1.

    No lock here: an OpenVINO encoder serialises its one infer request, and an ONNX Runtime session's run is
    thread-safe, so the verifier thread and an enrollment may embed at once.
    """
    out = np.empty((len(feeds), dimension), dtype=np.float32)
    for index, feed in enumerate(feeds):
        result = np.asarray(encoder.run({input_name: feed})[output_name], dtype=np.float32).reshape(-1)
        out[index] = result / max(float(np.linalg.norm(result)), 1e-12)
    return out
