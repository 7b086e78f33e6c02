"""Embeddings for bench_cohort: LFW3D pairs.txt images by fold, the face cohort (identities outside pairs.txt),
Tongji palms split into a cohort half and an evaluation half. Embeddings come from the calibration cache.

    nice -n 10 .venv/bin/python -m bench.cohort_data   # embeds what the cache lacks (1 thread)
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from kiosk.calibration import data as datasets
from kiosk.calibration.cache import EmbeddingCache
from kiosk.calibration.cohort import cohort_images
from kiosk.calibration.embed import Embedder, embed_paths, embedding_cache, load_embedder, load_image
from kiosk.config import KioskConfig, load_config

FACE_COHORT_IDENTITIES = 300
PALM_COHORT_PALMS = 50  # the tuning half: palms 0001-0050
PALM_COHORT_PER_PALM = 2  # 100 templates of 2,352 floats: under 1 MB
LFW_FOLDS = 10
CAMERA_FOLDS = (8, 9)  # report folds 9 and 10 seen again through a simulated cheaper camera
CAMERA_DIR = Path(__file__).resolve().parent / "cache" / "cohort-camera"


def shared_data(config: KioskConfig) -> Path:
    return Path(config.paths.eval_data_dir)


def bench_config() -> KioskConfig:
    config = load_config()
    config.runtime.threads = 1  # the machine is shared
    return config


@dataclass(frozen=True)
class FaceData:
    vectors: np.ndarray  # pairs.txt images
    identities: np.ndarray  # identity index per image
    fold_of_image: np.ndarray  # fold (0-9) each image first appears in
    genuine_pairs: list[tuple[np.ndarray, np.ndarray]]  # per fold: (first, second) image indices
    cohort_paths: list[Path]
    cohort_identities: set[str]


def face_paths(config: KioskConfig) -> tuple[datasets.ExplicitPairs, list[Path]]:
    root = shared_data(config) / "lfw3d_frontalized"
    pairs = datasets.read_pairs(root, root / "pairs.txt")
    manifest = datasets.read_manifest(root)
    cohort = cohort_images(manifest, set(pairs.images.identities), FACE_COHORT_IDENTITIES)
    return pairs, cohort


def palm_split(config: KioskConfig) -> tuple[list[Path], list[str], list[Path]]:
    """(evaluation paths, their palm ids, cohort paths): cohort from the tuning half, evaluation the other."""
    root = shared_data(config) / "palm_tongji_palmnet"
    manifest = datasets.read_manifest(root)
    palms = sorted(set(manifest.identities))
    tuning = set(palms[:PALM_COHORT_PALMS])
    evaluation = [(p, i) for p, i in zip(manifest.paths, manifest.identities, strict=True) if i not in tuning]
    listed = Counter(manifest.identities)
    usable = sum(1 for palm in tuning if listed[palm] >= PALM_COHORT_PER_PALM)
    cohort = cohort_images(manifest, set(palms) - tuning, usable, PALM_COHORT_PER_PALM)
    return [p for p, _ in evaluation], [i for _, i in evaluation], cohort


def embed(
    config: KioskConfig, embedder: Embedder, data_dir: Path, paths: list[Path], cached_only: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Vectors and validity of `paths`; with cached_only, images the cache lacks are invalid, not embedded."""
    cache = own_cache(config, embedder, data_dir, paths)
    if cached_only:
        found = [cache.get(path) for path in paths]
        dimension = next(entry[0].size for entry in found if entry is not None and entry[0] is not None)
        vectors = np.zeros((len(paths), dimension), dtype=np.float32)
        valid = np.zeros(len(paths), dtype=bool)
        for index, entry in enumerate(found):
            if entry is not None and entry[0] is not None:
                vectors[index], valid[index] = entry[0], True
        return vectors, valid

    def report(stage: str, done: int, total: int) -> None:
        if done % 320 == 0 or done == total:
            print(f"  {stage} {done}/{total}", file=sys.stderr, flush=True)

    result = embed_paths(embedder, paths, report, cache)
    return result.vectors, result.valid


def own_cache(config: KioskConfig, embedder: Embedder, data_dir: Path, paths: list[Path]) -> EmbeddingCache:
    """This bench's own cache file, seeded from the shared calibration cache: other benches embedding the same
    images at the same time rewrite the shared file from their own snapshot, losing each other's entries."""
    shared = embedding_cache(config, embedder, data_dir)
    own = EmbeddingCache(shared.path.parent, f"bench-cohort|{shared.path.name}")
    for path in paths:
        if own.get(path) is None and (entry := shared.get(path)) is not None and entry[0] is not None:
            own.put(path, entry[0])
    return own


def fold_order(pairs: datasets.ExplicitPairs) -> list[Path]:
    """pairs.txt images fold by fold, alternating tuning and report folds (1, 6, 2, 7, ...)."""
    fold_size = pairs.first.size // LFW_FOLDS
    ordered: dict[int, None] = {}
    for fold in [f for pair in zip(range(5), range(5, 10), strict=True) for f in pair]:
        span = slice(fold * fold_size, (fold + 1) * fold_size)
        for index in np.stack([pairs.first[span], pairs.second[span]], axis=1).ravel().tolist():
            ordered.setdefault(index, None)
    return [pairs.images.paths[i] for i in ordered]


def degrade(image: np.ndarray) -> np.ndarray:
    """A cheaper camera: 40 px of resolution, some blur, strong JPEG compression."""
    height, width = image.shape[:2]
    small = cv2.resize(image, (40, 40 * height // width), interpolation=cv2.INTER_AREA)
    blurred = cv2.GaussianBlur(cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR), (3, 3), 0)
    ok, encoded = cv2.imencode(".jpg", blurred, [cv2.IMWRITE_JPEG_QUALITY, 30])
    decoded = cv2.imdecode(encoded, cv2.IMREAD_COLOR) if ok else None
    if decoded is None:
        raise RuntimeError("JPEG round trip failed")
    return np.asarray(decoded)


def degraded_vectors(config: KioskConfig, embedder: Embedder, paths: list[Path]) -> np.ndarray:
    """The images as the cheaper camera sees them (written once under bench/cache), embedded (cached)."""
    copies = []
    for path in paths:
        copy = CAMERA_DIR / path.parent.name / path.name
        if not copy.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(copy), degrade(load_image(path)))
        copies.append(copy)
    vectors, valid = embed(config, embedder, CAMERA_DIR, copies)
    if not valid.all():
        raise RuntimeError(f"{int((~valid).sum())} degraded images could not be embedded")
    return vectors.astype(np.float64)


def camera_paths(config: KioskConfig) -> list[Path]:
    pairs, _cohort = face_paths(config)
    fold_size = pairs.first.size // LFW_FOLDS
    chosen = set()
    for fold in CAMERA_FOLDS:
        span = slice(fold * fold_size, (fold + 1) * fold_size)
        chosen |= set(pairs.first[span].tolist()) | set(pairs.second[span].tolist())
    return [pairs.images.paths[i] for i in sorted(chosen)]


def main() -> None:
    config = bench_config()
    face = load_embedder(config, "face")
    pairs, _cohort = face_paths(config)  # the cohort itself is shipped (calibration/cohort-*)
    root = shared_data(config) / "lfw3d_frontalized"
    ordered = fold_order(pairs)
    for start in range(0, len(ordered), 640):  # a fold at a time, so a bench can use the folds done so far
        embed(config, face, root, ordered[start : start + 640])
    degraded_vectors(config, face, camera_paths(config))


if __name__ == "__main__":
    main()
