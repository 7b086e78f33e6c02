"""Calibration end to end: data -> embeddings -> genuine/impostor scores -> figures -> threshold.

Callable from the CLI and from the Qt admin screen: `run_calibration` (data + embedder) or
`calibrate_scores` (score sets) return a `CalibrationResult`; nothing is written until `.apply(out_dir)`.
The progress callback receives (stage, done, total); raising from it aborts the run.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from kiosk.calibration import data as datasets
from kiosk.calibration.aligned import ordered_pair_scores, searches
from kiosk.calibration.cache import EmbeddingCache
from kiosk.calibration.embed import Embedder, Embeddings, Progress, embed_paths
from kiosk.calibration.schema import (
    Calibration,
    Counts,
    DatasetInfo,
    EncoderInfo,
    Figures,
    OperatingPoint,
    Rate,
    Rule,
    TargetFar,
)
from kiosk.calibration.scores import RateCount, ScoreAnalysis, ScoreSets, analyse, threshold_at_far
from kiosk.errors import CalibrationError, DataError

DEFAULT_TARGET_FAR = 1e-4
REPORTED_FARS = (1e-3, 1e-4)
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


@dataclass(frozen=True)
class CalibrationResult:
    calibration: Calibration
    analysis: ScoreAnalysis

    @property
    def threshold(self) -> float:
        return self.calibration.threshold

    def with_rule(self, rule: Rule, target_far: float | None = None) -> CalibrationResult:
        """The same scores with another operating point (what the admin screen does when a rule is picked)."""
        target = self.calibration.target_far if target_far is None else target_far
        analysis = _with_target(self.analysis, target)
        calibration = build_calibration(
            analysis,
            rule=rule,
            target_far=target,
            modality=self.calibration.modality,
            benchmark=self.calibration.benchmark,
            encoder=self.calibration.encoder,
            dataset=self.calibration.dataset,
            impostor_available=self.calibration.counts.impostor_available,
            extra_warnings=[w for w in self.calibration.warnings if w not in self.analysis.warnings],
            seconds=self.calibration.seconds,
            command=self.calibration.command,
            alignment_search=self.calibration.alignment_search,
        )
        return CalibrationResult(calibration, analysis)

    @property
    def file_stem(self) -> str:
        return f"{self.calibration.modality}-{self.calibration.benchmark}"

    def apply(self, out_dir: Path, plot: bool = True) -> tuple[Path, Path | None]:
        """Write <modality>-<benchmark>.json (and .png unless plot=False) into out_dir, atomically."""
        out_dir.mkdir(parents=True, exist_ok=True)
        json_path = out_dir / f"{self.file_stem}.json"
        png_path: Path | None = None
        seconds = dict(self.calibration.seconds)
        if plot:
            from kiosk.calibration.plot import save_plot

            started = time.perf_counter()
            png_path = save_plot(self, out_dir / f"{self.file_stem}.png")
            seconds["plot"] = round(time.perf_counter() - started, 3)
        update = {"plot": png_path.name if png_path else None, "seconds": seconds}
        calibration = self.calibration.model_copy(update=update)
        temporary = json_path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(calibration.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, json_path)
        return json_path, png_path


def _rate(count: RateCount) -> Rate:
    return Rate(value=count.value, errors=count.errors, trials=count.trials, ci95=count.ci95)


def _far_key(target: float) -> str:
    return f"{target:.0e}"


def _with_target(analysis: ScoreAnalysis, target: float) -> ScoreAnalysis:
    if target in analysis.far_targets:
        return analysis
    point = threshold_at_far(analysis.scores, target)
    warnings = list(analysis.warnings)
    if not point.resolved:
        warnings.append(
            f"FAR {target:g} is not resolved: it needs >= {point.impostors_needed:,} impostor pairs, "
            f"have {analysis.scores.impostor.size:,}; its threshold is just above the highest impostor score"
        )
    return replace(analysis, far_targets={**analysis.far_targets, target: point}, warnings=warnings)


def _operating_point(analysis: ScoreAnalysis, rule: str, threshold: float, resolved: bool, note: str) -> OperatingPoint:
    return OperatingPoint(
        rule=rule,
        threshold=threshold,
        far=_rate(analysis.scores.far(threshold)),
        frr=_rate(analysis.scores.frr(threshold)),
        resolved=resolved,
        note=note,
    )


def operating_points(analysis: ScoreAnalysis, target_far: float) -> dict[str, OperatingPoint]:
    far_point = analysis.far_targets[target_far]
    tau_d = analysis.intersection.tau_d
    strict_threshold = max(tau_d, far_point.threshold)
    strict_source = "tau_d" if tau_d >= far_point.threshold else f"FAR {target_far:g}"
    far_note = "" if far_point.resolved else f"unresolved: needs {far_point.impostors_needed:,} impostor pairs"
    return {
        "tau_d": _operating_point(analysis, "tau_d", tau_d, True, "density intersection between the modes"),
        "eer": _operating_point(analysis, "eer", analysis.eer_threshold, True, "FAR = FRR"),
        "far": _operating_point(analysis, "far", far_point.threshold, far_point.resolved, far_note),
        "strict": _operating_point(
            analysis,
            "strict",
            strict_threshold,
            far_point.resolved,
            f"max(tau_d, FAR {target_far:g} threshold) = {strict_source}",
        ),
    }


def build_calibration(
    analysis: ScoreAnalysis,
    *,
    rule: Rule,
    target_far: float,
    modality: str,
    benchmark: str,
    encoder: EncoderInfo,
    dataset: DatasetInfo,
    impostor_available: int | None = None,
    extra_warnings: list[str] | None = None,
    seconds: dict[str, float] | None = None,
    command: str | None = None,
    alignment_search: bool = False,
) -> Calibration:
    analysis = _with_target(analysis, target_far)
    points = operating_points(analysis, target_far)
    scores = analysis.scores
    far_targets = {
        _far_key(point.target): TargetFar(
            target=point.target,
            threshold=point.threshold,
            tar=_rate(RateCount(point.frr.trials - point.frr.errors, point.frr.trials)),
            achieved_far=_rate(point.far),
            resolved=point.resolved,
            impostors_needed=point.impostors_needed,
        )
        for point in analysis.far_targets.values()
    }
    figures = Figures(
        tau_d=analysis.intersection.tau_d,
        tau_d_crossings=analysis.intersection.crossings,
        genuine_mode=analysis.intersection.genuine_mode,
        impostor_mode=analysis.intersection.impostor_mode,
        far_at_tau_d=points["tau_d"].far,
        frr_at_tau_d=points["tau_d"].frr,
        eer=analysis.eer,
        eer_threshold=analysis.eer_threshold,
        eer_ci95=analysis.eer_ci95,
        bandwidth_genuine=analysis.genuine_density.bandwidth,
        bandwidth_impostor=analysis.impostor_density.bandwidth,
        genuine_mean=float(scores.genuine.mean()),
        genuine_std=float(scores.genuine.std()),
        impostor_mean=float(scores.impostor.mean()),
        impostor_std=float(scores.impostor.std()),
        far_targets=far_targets,
    )
    return Calibration(
        modality=modality,  # type: ignore[arg-type]
        benchmark=benchmark,
        threshold=points[rule].threshold,
        rule=rule,
        target_far=target_far,
        encoder=encoder,
        dataset=dataset,
        counts=Counts(
            genuine=int(scores.genuine.size),
            impostor=int(scores.impostor.size),
            impostor_available=int(scores.impostor.size if impostor_available is None else impostor_available),
        ),
        figures=figures,
        operating_points=points,
        warnings=[*analysis.warnings, *(extra_warnings or [])],
        created=datetime.now(UTC).replace(microsecond=0),
        seconds=dict(seconds or {}),
        command=command,
        alignment_search=alignment_search,
    )


def calibrate_scores(
    genuine: np.ndarray,
    impostor: np.ndarray,
    *,
    modality: str,
    encoder: EncoderInfo,
    benchmark: str = "scores",
    dataset: DatasetInfo | None = None,
    rule: Rule = "strict",
    target_far: float = DEFAULT_TARGET_FAR,
    impostor_available: int | None = None,
    warnings: list[str] | None = None,
    seconds: dict[str, float] | None = None,
    command: str | None = None,
    bootstrap: bool = True,
    alignment_search: bool = False,
) -> CalibrationResult:
    """Calibrate from ready-made score sets (cosine similarities); `alignment_search`: the probes carried their
    re-alignments (palm.alignment_search), which the file records."""
    if modality not in ("face", "palm"):
        raise CalibrationError(f"unknown modality '{modality}'", "use 'face' or 'palm'")
    started = time.perf_counter()
    analysis = analyse(ScoreSets.from_arrays(genuine, impostor), REPORTED_FARS, bootstrap=bootstrap)
    analysis = _with_target(analysis, target_far)
    timing = {**(seconds or {}), "analyse": round(time.perf_counter() - started, 3)}
    dataset = dataset or DatasetInfo(name=benchmark, path="", protocol="scores")
    calibration = build_calibration(
        analysis,
        rule=rule,
        target_far=target_far,
        modality=modality,
        benchmark=benchmark,
        encoder=encoder,
        dataset=dataset,
        impostor_available=impostor_available,
        extra_warnings=warnings,
        seconds=timing,
        command=command,
        alignment_search=alignment_search,
    )
    return CalibrationResult(calibration, analysis)


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
    return CollectedScores(genuine, impostor, available, dataset, warnings, seconds, search)


def run_calibration(
    spec: DataSpec,
    embedder: Embedder,
    *,
    encoder_name: str,
    rule: Rule = "strict",
    target_far: float = DEFAULT_TARGET_FAR,
    progress: Progress | None = None,
    command: str | None = None,
    bootstrap: bool = True,
    cache: EmbeddingCache | None = None,
) -> CalibrationResult:
    """Embed the labelled images with `embedder`, score all pairs and choose the threshold by `rule`."""
    collected = collect_scores(spec, embedder, progress, cache)
    if progress is not None:
        progress("analyse", 0, 1)
    result = calibrate_scores(
        collected.genuine,
        collected.impostor,
        modality=embedder.modality,
        encoder=EncoderInfo(name=encoder_name, sha256=embedder.model_sha256),
        benchmark=spec.benchmark_name(),
        dataset=collected.dataset,
        rule=rule,
        target_far=target_far,
        impostor_available=collected.impostor_available,
        warnings=collected.warnings,
        seconds=collected.seconds,
        command=command,
        bootstrap=bootstrap,
        alignment_search=collected.alignment_search,
    )
    if progress is not None:
        progress("analyse", 1, 1)
    return result


__all__ = [
    "CalibrationResult",
    "CollectedScores",
    "DataSpec",
    "build_calibration",
    "calibrate_scores",
    "collect_scores",
    "run_calibration",
]
