from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from kiosk.errors import ModelError
from kiosk.runtime import load_encoder


def _scale_model(path: Path) -> Path:
    node = helper.make_node("Mul", ["x", "two"], ["y"])
    graph = helper.make_graph(
        [node],
        "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_both_backends_run_the_same_graph_with_batches(tmp_path: Path, backend: str) -> None:
    encoder = load_encoder(_scale_model(tmp_path / "m.onnx"), backend=backend, threads=1)  # type: ignore[arg-type]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = encoder.run({"x": x})
    assert encoder.input_names == ["x"] and encoder.output_names == ["y"]
    assert np.allclose(out["y"], 2 * x)


@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_in_memory_onnx_bytes(tmp_path: Path, backend: str) -> None:
    data = _scale_model(tmp_path / "m.onnx").read_bytes()
    encoder = load_encoder(data, backend=backend)  # type: ignore[arg-type]
    assert np.allclose(encoder.run({"x": np.ones((1, 4), np.float32)})["y"], 2)


@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_missing_and_corrupt_model_files(tmp_path: Path, backend: str) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        load_encoder(tmp_path / "missing.onnx", backend=backend)  # type: ignore[arg-type]
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x00garbage")
    with pytest.raises(ModelError, match="cannot load"):
        load_encoder(corrupt, backend=backend)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_concurrent_callers_share_one_encoder(tmp_path: Path, backend: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    encoder = load_encoder(_scale_model(tmp_path / "m.onnx"), backend=backend)  # type: ignore[arg-type]

    def call(i: int) -> bool:
        x = np.full((2, 4), float(i), np.float32)
        return bool(np.allclose(encoder.run({"x": x})["y"], 2 * x))

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(call, range(200)))
