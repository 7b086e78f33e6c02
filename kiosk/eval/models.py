"""The models a LoCoMo run loads: the answering LLM behind the answer cache, the biometric embedder, and the gate's
threshold from the calibration."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kiosk.calibration.schema import Calibration
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, DataError, LLMError, ProbeError
from kiosk.eval.answer_cache import AnswerCache, CachedLLM
from kiosk.eval.assignments import Refusal


@dataclass
class LoadedLLM:
    llm: CachedLLM
    name: str  # slug used in file names
    sha256: str
    source: str


def file_sha256(path: Path, cache_dir: Path) -> str:
    """sha256 of a (large) file, remembered by path, size and mtime."""
    stat = path.stat()
    memo = (
        cache_dir
        / "sha256"
        / hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    )
    if memo.is_file():
        return memo.read_text().strip()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(digest.hexdigest())
    return digest.hexdigest()


def load_llm(config: KioskConfig, cache: AnswerCache | None, cache_dir: Path) -> LoadedLLM:
    """The configured LLM behind the answer cache, named and identified by its model file (or endpoint)."""
    from kiosk.llm.factory import create_llm
    from kiosk.llm.requant import runtime_model
    from kiosk.models import ModelStore

    settings = config.llm
    if settings.backend == "openai":
        endpoint = settings.openai
        if not endpoint.endpoint_url:
            raise LLMError("no LLM endpoint URL given", "pass --llm-endpoint URL")
        inner = create_llm(config)
        slug = "endpoint-" + "".join(ch if ch.isalnum() or ch in "-._" else "-" for ch in endpoint.endpoint_model)
        identity = f"endpoint:{endpoint.endpoint_url}|{endpoint.endpoint_model}"
        sha = hashlib.sha256(identity.encode()).hexdigest()
        return LoadedLLM(CachedLLM(inner, sha, cache), slug, sha, identity)
    models = ModelStore(config.paths.models)
    if settings.gguf_path is not None:
        path = settings.gguf_path
        if not path.is_file():
            raise DataError(f"GGUF file {path} does not exist", "give the path of a .gguf model")
        sha = file_sha256(path, cache_dir)
        slug = path.stem
    else:
        path, sha = runtime_model(settings, models)
        slug = settings.model
    inner = create_llm(config, models)
    return LoadedLLM(CachedLLM(inner, sha, cache), slug, sha, str(path))


def llama_build(config: KioskConfig) -> list[str] | None:
    """The instruction sets the llama.cpp build uses (its rounding decides some greedy answers), or None."""
    if config.llm.backend != "llamacpp":
        return None
    from kiosk.llm.cpu_support import built_for, verified_llama_build

    return built_for(verified_llama_build())


def load_embedder(config: KioskConfig, modality: str) -> Any:
    if modality == "face":
        from kiosk.identity.face import load_face_embedder

        return load_face_embedder(config)
    from kiosk.identity.palm import load_palm_embedder

    return load_palm_embedder(config)


def embed_benchmark_image(embedder: Any, modality: str, path: Path) -> np.ndarray:
    from kiosk.identity.face import read_image

    image = read_image(path)
    vector = embedder.embed_crop(image) if modality == "face" else embedder.embed_roi(image)
    return np.asarray(vector, dtype=np.float32)


def capture_refusal(embedder: Any, modality: str, image_root: Path) -> Refusal:
    """The terminal's capture gates as a test of one benchmark image: None if accepted, else the reason."""

    def refusal(relative: str) -> str | None:
        try:
            embed_benchmark_image(embedder, modality, image_root / relative)
        except ProbeError as exc:
            return exc.message
        return None

    return refusal


def calibrated_threshold(calibration: Calibration, operating_point: str | None) -> tuple[float, str]:
    """The calibration's chosen threshold, or one of its named operating points (e.g. `tau_d`, `eer`)."""
    if operating_point is None:
        return float(calibration.threshold), calibration.rule
    point = calibration.operating_points.get(operating_point)
    if point is None:
        known = ", ".join(sorted(calibration.operating_points))
        raise CalibrationError(
            f"the {calibration.modality} calibration has no operating point {operating_point!r}",
            f"use one of: {known}",
        )
    return float(point.threshold), operating_point
