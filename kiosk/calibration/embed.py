"""Embed benchmark images with the active encoder; unreadable images are listed and skipped, never fatal alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import cv2
import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, KioskError

Progress = Callable[[str, int, int], None]
BATCH = 32


class Embedder(Protocol):
    """What calibration needs from a face or palm embedder (kiosk.identity.face / kiosk.identity.palm)."""

    modality: str
    model_sha256: str

    def embed_image(self, img: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Embeddings:
    vectors: np.ndarray  # (n, d) float32, L2-normalised; rows of unreadable images are zero
    valid: np.ndarray  # (n,) bool
    unreadable: list[str]  # "path: reason"


def load_image(path: Path) -> np.ndarray:
    """RGB uint8 image; raises ValueError with a reason when the file cannot be decoded."""
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except OSError as exc:
        raise ValueError(f"cannot read file ({exc.strerror or exc})") from exc
    image = cv2.imdecode(raw, cv2.IMREAD_COLOR) if raw.size else None
    if image is None:
        raise ValueError("not a decodable image")
    return np.ascontiguousarray(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))


def _single(embedder: Embedder) -> Callable[[np.ndarray], np.ndarray]:
    for name in ("embed_crop", "embed_roi"):
        method = getattr(embedder, name, None)
        if callable(method):
            return method
    return embedder.embed_image


def _batched(embedder: Embedder) -> Callable[[list[np.ndarray]], np.ndarray] | None:
    for name in ("embed_crops", "embed_rois"):
        method = getattr(embedder, name, None)
        if callable(method):
            return method
    return None


def _normalised(vector: np.ndarray) -> np.ndarray:
    flat = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(flat))
    if not np.isfinite(norm) or norm == 0.0:
        raise ValueError("encoder returned a zero or non-finite vector")
    return flat / norm


def embed_paths(embedder: Embedder, paths: Sequence[Path], progress: Progress | None = None) -> Embeddings:
    embed_one = _single(embedder)
    embed_many = _batched(embedder)
    vectors: list[np.ndarray | None] = [None] * len(paths)
    unreadable: list[str] = []
    for start in range(0, len(paths), BATCH):
        batch_indices: list[int] = []
        batch_images: list[np.ndarray] = []
        for index in range(start, min(start + BATCH, len(paths))):
            try:
                batch_images.append(load_image(paths[index]))
                batch_indices.append(index)
            except ValueError as exc:
                unreadable.append(f"{paths[index]}: {exc}")
        batch_vectors: list[np.ndarray] | None = None
        if embed_many is not None and batch_images:
            try:
                batch_vectors = list(np.asarray(embed_many(batch_images)))
            except (KioskError, ValueError):
                batch_vectors = None  # find the bad image(s) one by one below
        for position, index in enumerate(batch_indices):
            try:
                raw = batch_vectors[position] if batch_vectors is not None else embed_one(batch_images[position])
                vectors[index] = _normalised(raw)
            except (KioskError, ValueError) as exc:
                reason = exc.message if isinstance(exc, KioskError) else str(exc)
                unreadable.append(f"{paths[index]}: {reason}")
        if progress is not None:
            progress("embed", min(start + BATCH, len(paths)), len(paths))
    dimension = next((v.size for v in vectors if v is not None), 0)
    matrix = np.zeros((len(paths), dimension), dtype=np.float32)
    valid = np.zeros(len(paths), dtype=bool)
    for index, vector in enumerate(vectors):
        if vector is not None:
            if vector.size != dimension:
                unreadable.append(f"{paths[index]}: embedding of size {vector.size}, expected {dimension}")
                continue
            matrix[index] = vector
            valid[index] = True
    return Embeddings(matrix, valid, sorted(unreadable))


def encoder_name(config: KioskConfig, modality: str) -> str:
    return config.face.embedder if modality == "face" else config.palm.encoder


def load_embedder(config: KioskConfig, modality: str) -> Embedder:
    """The active face or palm embedder (imported lazily: model loading is slow and optional here)."""
    try:
        if modality == "face":
            from kiosk.identity.face import load_face_embedder

            return cast(Embedder, load_face_embedder(config))
        if modality == "palm":
            from kiosk.identity.palm import load_palm_embedder

            return cast(Embedder, load_palm_embedder(config))
    except ImportError as exc:
        raise CalibrationError(
            f"the {modality} embedder is not available ({exc})", "install the kiosk package completely"
        ) from exc
    raise CalibrationError(f"unknown modality '{modality}'", "use 'face' or 'palm'")
