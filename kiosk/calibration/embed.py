"""Embed benchmark images with the active encoder; unreadable images are listed and skipped, never fatal alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import cv2
import numpy as np

from kiosk.calibration.cache import EmbeddingCache
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, KioskError
from kiosk.identity.image_files import ImageTooLarge, decode_image

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
    cached: int = 0  # images whose vector (or failure) came from the embedding cache


def load_image(path: Path) -> np.ndarray:
    """BGR uint8 image (OpenCV order, what the embedders take); ValueError with a reason if undecodable."""
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except OSError as exc:
        raise ValueError(f"cannot read file ({exc.strerror or exc})") from exc
    try:
        image = decode_image(raw, path.name, cv2.IMREAD_COLOR) if raw.size else None
    except ImageTooLarge as exc:
        raise ValueError(exc.message) from exc
    if image is None:
        raise ValueError("not a decodable image")
    return image


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


def embed_paths(
    embedder: Embedder,
    paths: Sequence[Path],
    progress: Progress | None = None,
    cache: EmbeddingCache | None = None,
) -> Embeddings:
    embed_one = _single(embedder)
    embed_many = _batched(embedder)
    if cache is not None and not _cache_still_valid(cache, embed_one, paths):
        cache.clear()
    vectors: list[np.ndarray | None] = [None] * len(paths)
    reasons: dict[int, str] = {}
    pending: list[int] = []
    for index, path in enumerate(paths):
        cached = cache.get(path) if cache is not None else None
        if cached is None:
            pending.append(index)
        elif cached[0] is not None:
            vectors[index] = cached[0]
        else:
            reasons[index] = cached[1]
    done = len(paths) - len(pending)
    for batch_number, start in enumerate(range(0, len(pending), BATCH)):
        batch = pending[start : start + BATCH]
        readable: list[int] = []
        images: list[np.ndarray] = []
        for index in batch:
            try:
                images.append(load_image(paths[index]))
                readable.append(index)
            except ValueError as exc:
                reasons[index] = str(exc)
        batch_vectors: list[np.ndarray] | None = None
        if embed_many is not None and images:
            try:
                batch_vectors = list(np.asarray(embed_many(images)))
            except (KioskError, ValueError):
                batch_vectors = None  # find the bad image(s) one by one below
        for position, index in enumerate(readable):
            try:
                raw = batch_vectors[position] if batch_vectors is not None else embed_one(images[position])
                vectors[index] = _normalised(raw)
            except (KioskError, ValueError) as exc:
                reasons[index] = exc.message if isinstance(exc, KioskError) else str(exc)
        if cache is not None:
            for index in batch:
                cache.put(paths[index], vectors[index], reasons.get(index, ""))
            if batch_number % 20 == 19:
                cache.save()  # an interrupted run keeps most of its work
        done += len(batch)
        if progress is not None:
            progress("embed", done, len(paths))
    if cache is not None:
        cache.save()
    if progress is not None and not pending:
        progress("embed", len(paths), len(paths))
    unreadable = [f"{paths[index]}: {reason}" for index, reason in reasons.items()]
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
    return Embeddings(matrix, valid, sorted(unreadable), cached=len(paths) - len(pending))


def encoder_name(config: KioskConfig, modality: str, embedder: object | None = None) -> str:
    name = getattr(embedder, "name", None)
    if isinstance(name, str) and name:
        return name
    return config.face.embedder if modality == "face" else config.palm.encoder


def embedding_cache(config: KioskConfig, embedder: Embedder, data_dir: Path, reuse: bool = True) -> EmbeddingCache:
    """The cache for this encoder model and data folder (settings are checked by re-embedding one image)."""
    key = "|".join([str(getattr(embedder, "name", "")), embedder.model_sha256, str(data_dir.resolve())])
    return EmbeddingCache(config.paths.data_dir / "cache" / "calibration", key, reuse)


def _cache_still_valid(
    cache: EmbeddingCache, embed_one: Callable[[np.ndarray], np.ndarray], paths: Sequence[Path]
) -> bool:
    """Re-embed one cached image: a changed preprocessing setting (same model) must not reuse old vectors."""
    for path in paths:
        cached = cache.get(path)
        if cached is None or cached[0] is None:
            continue
        try:
            fresh = _normalised(embed_one(load_image(path)))
        except (KioskError, ValueError):
            return False
        return fresh.shape == cached[0].shape and float(fresh @ cached[0]) > 0.9999
    return True


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
