"""Training-free palmprint code: a Gabor bank, a soft competitive code, block pooling, L2 norm.

The same computation exists twice on purpose: as an ONNX graph (built here with onnx.helper, run by
OpenVINO or ONNX Runtime) and as a plain numpy/OpenCV reference, so the graph can be checked.

Steps, for a 128x128 grayscale ROI:
1. standardise the ROI (zero mean, unit variance) so lighting and contrast drop out;
2. filter with K even Gabor filters (CompCode's kernel, orientations pi*j/K), reflect-101 borders;
3. scale the responses by their RMS and take a softmax over orientations of -beta*response: palm lines
   are dark, so the most negative response wins (CompCode's argmin), softly;
4. average the K orientation maps in overlapping blocks: a block-wise orientation histogram, which
   tolerates the few pixels of misalignment between two ROIs of one palm;
5. flatten, subtract the vector's mean, L2-normalise: cosine similarity then compares two palms.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass

import cv2
import numpy as np

GRAPH_VERSION = "1"
"""Bump when the graph's structure changes, so cached graphs and calibrations are told apart."""

INPUT_NAME = "roi"
OUTPUT_NAME = "embedding"
_EPS = 1e-6


@dataclass(frozen=True)
class GaborCodeParams:
    """Encoder parameters (tuned on Tongji palms 1-30 only; see bench/results/palm.md)."""

    roi_size: int = 128
    orientations: int = 12
    kernel_size: int = 25
    omega: float = 0.9  # radial frequency (radians/pixel)
    octaves: float = 1.5  # CompCode's bandwidth delta
    beta: float = 20.0  # softmax sharpness; large -> hard competitive code
    block: int = 20
    stride: int = 8

    @property
    def grid(self) -> int:
        return (self.roi_size - self.block) // self.stride + 1

    @property
    def dimension(self) -> int:
        return self.orientations * self.grid * self.grid

    def key(self) -> str:
        """A short hash of the parameters and graph version, used to name the cached graph."""
        payload = json.dumps({"version": GRAPH_VERSION, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def gabor_kernel(size: int, omega: float, theta: float, octaves: float) -> np.ndarray:
    """CompCode's even (real) Gabor filter, zero-mean and L1-normalised, float64."""
    kappa = math.sqrt(2 * math.log(2)) * (2**octaves + 1) / (2**octaves - 1)
    radius = size // 2
    y, x = np.mgrid[-radius : radius + 1, -radius : radius + 1].astype(np.float64)
    along = x * math.cos(theta) + y * math.sin(theta)
    across = -x * math.sin(theta) + y * math.cos(theta)
    envelope = np.exp(-(omega**2) / (8 * kappa**2) * (4 * along**2 + across**2))
    kernel = omega / (math.sqrt(2 * math.pi) * kappa) * envelope * (np.cos(omega * along) - math.exp(-(kappa**2) / 2))
    kernel -= kernel.mean()
    return kernel / np.abs(kernel).sum()


def gabor_bank(params: GaborCodeParams) -> np.ndarray:
    """(K, 1, k, k) float32 weights; rounded so the generated ONNX bytes are the same on every machine."""
    kernels = [
        gabor_kernel(params.kernel_size, params.omega, math.pi * j / params.orientations, params.octaves)
        for j in range(params.orientations)
    ]
    return np.round(np.stack(kernels)[:, None], 7).astype(np.float32)


# ---- ONNX graph ---------------------------------------------------------------------------------
def build_onnx(params: GaborCodeParams) -> bytes:
    """The encoder as ONNX bytes: input `roi` (N,1,S,S) float32 gray levels, output `embedding` (N,D)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    size, pad = params.roi_size, params.kernel_size // 2

    def const(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(value, name=name)

    initializers = [
        const("gabor_weights", gabor_bank(params)),
        const("eps", np.array(_EPS, dtype=np.float32)),
        const("neg_beta", np.array(-params.beta, dtype=np.float32)),
        const("pads", np.array([0, 0, pad, pad, 0, 0, pad, pad], dtype=np.int64)),
        const("flat_shape", np.array([0, -1], dtype=np.int64)),
    ]
    nodes = [
        # 1. per-image standardisation
        helper.make_node("ReduceMean", [INPUT_NAME], ["mean"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Sub", [INPUT_NAME, "mean"], ["centred"]),
        helper.make_node("Mul", ["centred", "centred"], ["centred_sq"]),
        helper.make_node("ReduceMean", ["centred_sq"], ["variance"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Add", ["variance", "eps"], ["variance_eps"]),
        helper.make_node("Sqrt", ["variance_eps"], ["std"]),
        helper.make_node("Div", ["centred", "std"], ["standard"]),
        # 2. Gabor bank
        helper.make_node("Pad", ["standard", "pads"], ["padded"], mode="reflect"),
        helper.make_node("Conv", ["padded", "gabor_weights"], ["responses"], kernel_shape=[params.kernel_size] * 2),
        # 3. soft competitive code over orientations
        helper.make_node("Mul", ["responses", "responses"], ["responses_sq"]),
        helper.make_node("ReduceMean", ["responses_sq"], ["response_power"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Add", ["response_power", "eps"], ["response_power_eps"]),
        helper.make_node("Sqrt", ["response_power_eps"], ["response_rms"]),
        helper.make_node("Div", ["responses", "response_rms"], ["scaled"]),
        helper.make_node("Mul", ["scaled", "neg_beta"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["code"], axis=1),
        # 4. block-wise orientation histograms
        helper.make_node(
            "AveragePool", ["code"], ["histograms"], kernel_shape=[params.block] * 2, strides=[params.stride] * 2
        ),
        # 5. flatten, centre, L2-normalise
        helper.make_node("Reshape", ["histograms", "flat_shape"], ["flat"]),
        helper.make_node("ReduceMean", ["flat"], ["flat_mean"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["flat", "flat_mean"], ["flat_centred"]),
        helper.make_node("ReduceL2", ["flat_centred"], ["norm"], axes=[1], keepdims=1),
        helper.make_node("Max", ["norm", "eps"], ["norm_safe"]),
        helper.make_node("Div", ["flat_centred", "norm_safe"], [OUTPUT_NAME]),
    ]
    graph = helper.make_graph(
        nodes,
        f"palm_compcode_{params.key()}",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", 1, size, size])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", params.dimension])],
        initializer=initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="bio-memory-kiosk",
        producer_version=GRAPH_VERSION,
        doc_string=json.dumps(asdict(params), sort_keys=True),
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString(deterministic=True))


# ---- numpy/OpenCV reference -------------------------------------------------------------------------
def reference_encode(roi: np.ndarray, params: GaborCodeParams) -> np.ndarray:
    """The same encoder without ONNX: one (S,S) gray ROI -> (D,) float32 unit vector."""
    if roi.shape != (params.roi_size, params.roi_size):
        raise ValueError(f"reference_encode needs a {params.roi_size}x{params.roi_size} ROI, got {roi.shape}")
    image = roi.astype(np.float32)
    centred = image - image.mean()
    standard = centred / np.sqrt((centred * centred).mean() + _EPS)
    bank = gabor_bank(params)[:, 0]
    responses = np.stack([cv2.filter2D(standard, cv2.CV_32F, k, borderType=cv2.BORDER_REFLECT_101) for k in bank])
    logits = -params.beta * responses / np.sqrt((responses * responses).mean() + _EPS)
    logits -= logits.max(axis=0, keepdims=True)
    weights = np.exp(logits)
    code = weights / weights.sum(axis=0, keepdims=True)
    histograms = np.stack([_block_means(channel, params) for channel in code])
    flat = histograms.reshape(-1)
    flat = flat - flat.mean()
    return (flat / max(float(np.linalg.norm(flat)), _EPS)).astype(np.float32)


def _block_means(channel: np.ndarray, params: GaborCodeParams) -> np.ndarray:
    integral = cv2.integral(channel.astype(np.float64))
    starts = np.arange(params.grid) * params.stride
    ends = starts + params.block
    total = (
        integral[np.ix_(ends, ends)]
        - integral[np.ix_(starts, ends)]
        - integral[np.ix_(ends, starts)]
        + integral[np.ix_(starts, starts)]
    )
    return total / (params.block * params.block)
