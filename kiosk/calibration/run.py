"""Calibration end to end: data -> embeddings -> genuine/impostor scores (kiosk.calibration.collect) -> figures
-> threshold.

Callable from the CLI and from the Qt admin screen: `run_calibration` (data + embedder) or
`calibrate_scores` (score sets) return a `CalibrationResult`; nothing is written until `.apply(out_dir)`.
The progress callback receives (stage, done, total); raising from it aborts the run.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np

from kiosk.calibration.cache import EmbeddingCache
from kiosk.calibration.collect import DataSpec, collect_scores
from kiosk.calibration.embed import Embedder, Progress
from kiosk.calibration.fused_trials import (
    FUSED_ENROL,
    MIN_FUSED_IDENTITIES,
    FusedScores,
    fused_gate,
    fused_operating_point,
)
from kiosk.calibration.schema import (
    Calibration,
    Counts,
    DatasetInfo,
    EncoderInfo,
    Figures,
    FusedGate,
    OperatingPoint,
    Rate,
    Rule,
    TargetFar,
)
from kiosk.calibration.scores import RateCount, ScoreAnalysis, ScoreSets, analyse, threshold_at_far
from kiosk.errors import CalibrationError
from kiosk.identity.verify import FUSE_FRAMES

DEFAULT_TARGET_FAR = 1e-4
REPORTED_FARS = (1e-3, 1e-4)
RuleChoice = Rule | Literal["auto"]
"""'auto': the 'fused' rule when the data supports its trials, else 'strict'."""


@dataclass(frozen=True)
class CalibrationResult:
    calibration: Calibration
    analysis: ScoreAnalysis
    fused: dict[int, FusedScores] | None = None  # the fused trials, so another target FAR can be picked

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
            fused=_fused_gate(self.fused, analysis, target),
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
        return CalibrationResult(calibration, analysis, self.fused)

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


def strict_threshold(analysis: ScoreAnalysis, target_far: float) -> float:
    return max(analysis.intersection.tau_d, analysis.far_targets[target_far].threshold)


def operating_points(
    analysis: ScoreAnalysis, target_far: float, fused: FusedGate | None = None
) -> dict[str, OperatingPoint]:
    """Every rule's threshold with its FAR and FRR on the calibration's pairs; the 'fused' rule's (only with fused
    trials) with the FAR and FRR of probes fused from the live camera's frames, which it is chosen for."""
    far_point = analysis.far_targets[target_far]
    tau_d = analysis.intersection.tau_d
    strict = strict_threshold(analysis, target_far)
    strict_source = "tau_d" if tau_d >= far_point.threshold else f"FAR {target_far:g}"
    far_note = "" if far_point.resolved else f"unresolved: needs {far_point.impostors_needed:,} impostor pairs"
    points = {
        "tau_d": _operating_point(analysis, "tau_d", tau_d, True, "density intersection between the modes"),
        "eer": _operating_point(analysis, "eer", analysis.eer_threshold, True, "FAR = FRR"),
        "far": _operating_point(analysis, "far", far_point.threshold, far_point.resolved, far_note),
        "strict": _operating_point(
            analysis,
            "strict",
            strict,
            far_point.resolved,
            f"max(tau_d, FAR {target_far:g} threshold) = {strict_source}",
        ),
    }
    if fused is not None:
        points["fused"] = fused_operating_point(analysis, fused, strict)
    return points


def _fused_gate(trials: dict[int, FusedScores] | None, analysis: ScoreAnalysis, target: float) -> FusedGate | None:
    if trials is None:
        return None
    return fused_gate(trials, target, strict_threshold(_with_target(analysis, target), target), FUSED_ENROL)


def build_calibration(
    analysis: ScoreAnalysis,
    *,
    rule: Rule,
    fused: FusedGate | None = None,
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
    points = operating_points(analysis, target_far, fused)
    if rule not in points:
        images = FUSED_ENROL + FUSE_FRAMES[modality]  # type: ignore[index]
        raise CalibrationError(
            f"the '{rule}' rule needs {MIN_FUSED_IDENTITIES}+ people with {images}+ images each (fused trials)",
            "add images per person, or choose --rule strict",
        )
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
        fused=fused,
    )


def calibrate_scores(
    genuine: np.ndarray,
    impostor: np.ndarray,
    *,
    modality: str,
    encoder: EncoderInfo,
    benchmark: str = "scores",
    dataset: DatasetInfo | None = None,
    rule: RuleChoice = "strict",
    target_far: float = DEFAULT_TARGET_FAR,
    impostor_available: int | None = None,
    warnings: list[str] | None = None,
    seconds: dict[str, float] | None = None,
    command: str | None = None,
    bootstrap: bool = True,
    alignment_search: bool = False,
    fused: dict[int, FusedScores] | None = None,
) -> CalibrationResult:
    """Calibrate from ready-made score sets (cosine similarities); `alignment_search`: the probes carried their
    re-alignments (palm.alignment_search), which the file records; `fused`: trials of probes fused over frames
    (kiosk.calibration.fused_trials), which the 'fused' rule needs."""
    if modality not in ("face", "palm"):
        raise CalibrationError(f"unknown modality '{modality}'", "use 'face' or 'palm'")
    started = time.perf_counter()
    analysis = analyse(ScoreSets.from_arrays(genuine, impostor), REPORTED_FARS, bootstrap=bootstrap)
    analysis = _with_target(analysis, target_far)
    gate = _fused_gate(fused, analysis, target_far)
    timing = {**(seconds or {}), "analyse": round(time.perf_counter() - started, 3)}
    dataset = dataset or DatasetInfo(name=benchmark, path="", protocol="scores")
    if rule == "auto":
        rule = "fused" if gate is not None else "strict"
    calibration = build_calibration(
        analysis,
        rule=rule,
        fused=gate,
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
    return CalibrationResult(calibration, analysis, fused)


def run_calibration(
    spec: DataSpec,
    embedder: Embedder,
    *,
    encoder_name: str,
    rule: RuleChoice = "auto",
    target_far: float = DEFAULT_TARGET_FAR,
    progress: Progress | None = None,
    command: str | None = None,
    bootstrap: bool = True,
    cache: EmbeddingCache | None = None,
) -> CalibrationResult:
    """Embed the labelled images with `embedder`, score all pairs (and fused probes, DataSpec.fused) and choose the
    threshold by `rule`."""
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
        fused=collected.fused,
    )
    if progress is not None:
        progress("analyse", 1, 1)
    return result


__all__ = [
    "CalibrationResult",
    "DataSpec",
    "build_calibration",
    "calibrate_scores",
    "run_calibration",
]
