"""Labelled images -> embeddings -> genuine and impostor scores (pairs, and probes fused over frames).

`collect_scores` is the data half of a calibration (kiosk.calibration.run chooses the threshold from its scores).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kiosk.calibration import data as datasets
from kiosk.calibration.aligned import ordered_pair_scores, searches
from kiosk.calibration.cache import EmbeddingCache
from kiosk.calibration.embed import Embedder, Embeddings, Progress, embed_paths
from kiosk.calibration.fused_trials import FusedScores, live_fused_trials
from kiosk.calibration.schema import DatasetInfo
from kiosk.errors import CalibrationError, DataError

DEFAULT_MAX_IMPOSTORS = 2_000_000
_BLOCK_ELEMENTS = 8_000_000


@dataclass(frozen=True)
class DataSpec:
    """Where the labelled images are and how to pair them."""

    data_dir: Path
    pairs_file: Path | None = None
    all_impostors: bool = False  # with a pairs file: impostors = every different-identity pair of its images
    manifest: Path | None = None
    identity_column: str | None = None
    benchmark: str | None = None
    max_impostors: int | None = DEFAULT_MAX_IMPOSTORS
    max_identities: int | None = None
    seed: int = 0
    max_unreadable_fraction: float = 0.2
    fused: bool = True  # also score probes fused over frames, as the live camera makes them (the 'fused' rule)

    @property
    def protocol(self) -> str:
        if self.pairs_file is None:
            return "all-pairs"
        return "pairs+all-impostors" if self.all_impostors else "pairs"

    def benchmark_name(self) -> str:
        if self.benchmark:
            return self.benchmark
        name = self.data_dir.resolve().name.lower()
        for known in ("lfw", "tongji"):
            if known in name:
                return known
        return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "data"


@dataclass(frozen=True)
class CollectedScores:
    genuine: np.ndarray
    impostor: np.ndarray
    impostor_available: int
    dataset: DatasetInfo
    warnings: list[str]
    seconds: dict[str, float]
    alignment_search: bool = False
    fused: dict[int, FusedScores] | None = None


def _pair_scores(vectors: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", vectors[first], vectors[second]).astype(np.float64)


def all_pair_scores(
    vectors: np.ndarray,
    labels: np.ndarray,
    keep_impostor: float,
    seed: int,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every genuine pair and every impostor pair (or a deterministic Bernoulli sample of the impostors)."""
    count = vectors.shape[0]
    block = max(1, _BLOCK_ELEMENTS // max(count, 1))
    rng = np.random.default_rng(seed)
    genuine_parts: list[np.ndarray] = []
    impostor_parts: list[np.ndarray] = []
    for start in range(0, count, block):
        stop = min(start + block, count)
        similarity = vectors[start:stop] @ vectors[start:].T
        upper = np.arange(count - start)[None, :] > np.arange(stop - start)[:, None]
        same = labels[start:stop, None] == labels[None, start:]
        genuine_parts.append(similarity[upper & same].astype(np.float64))
        impostor = similarity[upper & ~same]
        if keep_impostor < 1.0:
            impostor = impostor[rng.random(impostor.size) < keep_impostor]
        impostor_parts.append(impostor.astype(np.float64))
        if progress is not None:
            progress("score", stop, count)
    return np.concatenate(genuine_parts), np.concatenate(impostor_parts)


def _check_unreadable(embeddings: Embeddings, total: int, spec: DataSpec) -> None:
    bad = len(embeddings.unreadable)
    if total and bad / total > spec.max_unreadable_fraction:
        example = embeddings.unreadable[0]
        raise DataError(
            f"{bad} of {total} images could not be read or embedded (e.g. {example})",
            f"more than {spec.max_unreadable_fraction:.0%} is too many to trust a threshold; fix the data",
        )


def collect_scores(
    spec: DataSpec, embedder: Embedder, progress: Progress | None = None, cache: EmbeddingCache | None = None
) -> CollectedScores:
    if not spec.data_dir.is_dir():
        raise DataError(f"data folder {spec.data_dir} does not exist", "give --data DIR with the images")
    seconds: dict[str, float] = {}
    warnings: list[str] = []
    search = searches(embedder)
    if search and spec.pairs_file is not None:
        raise CalibrationError(
            "a calibration with palm.alignment_search scores every ordered pair of a manifest, not a pairs file",
            "calibrate from a folder with manifest.csv (no --pairs), or set palm.alignment_search = false",
        )
    if spec.pairs_file is not None:
        pairs = datasets.read_pairs(spec.data_dir, spec.pairs_file)
        images = pairs.images
    else:
        images = datasets.read_manifest(spec.data_dir, spec.manifest, spec.identity_column)
        if spec.max_identities:
            images = datasets.subset_identities(images, spec.max_identities, spec.seed)
        datasets.check_identities(images, str(spec.manifest or spec.data_dir / "manifest.csv"))
    started = time.perf_counter()
    embeddings = embed_paths(embedder, images.paths, progress, cache)
    seconds["embed"] = round(time.perf_counter() - started, 3)
    _check_unreadable(embeddings, len(images.paths), spec)
    if embeddings.unreadable:
        warnings.append(f"{len(embeddings.unreadable)} unreadable image(s) skipped (listed in dataset.unreadable)")
    started = time.perf_counter()
    keep = 1.0
    skipped_pairs = 0
    if spec.pairs_file is not None:
        usable = embeddings.valid[pairs.first] & embeddings.valid[pairs.second]
        skipped_pairs = int((~usable).sum())
        if skipped_pairs:
            warnings.append(f"{skipped_pairs} pair(s) skipped because an image was unreadable")
        scores = _pair_scores(embeddings.vectors, pairs.first[usable], pairs.second[usable])
        genuine_mask = pairs.genuine[usable]
        genuine, impostor = scores[genuine_mask], scores[~genuine_mask]
        available = int((~pairs.genuine).sum())
        if progress is not None:
            progress("score", 1, 1)
    if spec.pairs_file is None or spec.all_impostors:
        valid = np.flatnonzero(embeddings.valid)
        identities = [images.identities[i] for i in valid]
        if spec.pairs_file is None and len(valid) < len(images.paths):
            readable = datasets.LabelledImages([images.paths[i] for i in valid], identities)
            datasets.check_identities(readable, "the readable images")
        _, available = datasets.all_pair_counts(identities)
        available *= 2 if search else 1  # the search scores every ordered pair (kiosk.calibration.aligned)
        keep = datasets.impostor_keep_probability(available, spec.max_impostors)
        if keep < 1.0:
            warnings.append(f"impostor pairs sampled: {keep:.4%} of {available:,} (deterministic, seed {spec.seed})")
        labels = np.unique(np.asarray(identities), return_inverse=True)[1]
        if search:
            paths = [images.paths[i] for i in valid]
            all_genuine, impostor = ordered_pair_scores(
                embedder,  # type: ignore[arg-type]
                paths,
                embeddings.vectors[valid],
                labels,
                keep,
                spec.seed,
                progress,
            )
        else:
            all_genuine, impostor = all_pair_scores(embeddings.vectors[valid], labels, keep, spec.seed, progress)
        if spec.pairs_file is None:
            genuine = all_genuine
    seconds["score"] = round(time.perf_counter() - started, 3)
    fused = None
    if spec.fused:
        started = time.perf_counter()
        fused = live_fused_trials(embedder.modality, search, embeddings, images.identities, spec.seed, warnings)
        seconds["fused"] = round(time.perf_counter() - started, 3)
    readable_identities = {images.identities[i] for i in np.flatnonzero(embeddings.valid)}
    dataset = DatasetInfo(
        name=spec.benchmark_name(),
        path=str(spec.data_dir),
        protocol=spec.protocol,  # type: ignore[arg-type]
        pairs_file=str(spec.pairs_file) if spec.pairs_file else None,
        images=int(embeddings.valid.sum()),
        identities=len(readable_identities),
        unreadable=embeddings.unreadable,
        skipped_pairs=skipped_pairs,
        cached_embeddings=embeddings.cached,
        impostor_fraction=keep,
    )
    return CollectedScores(genuine, impostor, available, dataset, warnings, seconds, search, fused)
