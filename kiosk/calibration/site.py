"""Site calibration: a threshold proposed from what a real terminal has, with how far it can be trusted.

Genuine scores are the enrolled people's own frames, leave one frame out: each frame scored the way the gate
scores a probe (the maximum cosine over that person's other frames). Impostor scores are the shipped cohort
(`kiosk.calibration.cohort`) and every other enrolled person, each scored against each enrolled person the
same way. The proposal is the lowest threshold whose FAR on those impostors is at most the target, with a
Clopper-Pearson interval on its FAR and a bootstrap interval on the threshold. With N impostor trials and none
accepted, the data only show FAR below about 3 / N (rule of three): a target under that is said plainly, never
claimed. Enrollment frames come from one sitting, so the genuine scores are optimistic (the FRR is a floor).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kiosk.calibration.active import active_calibration
from kiosk.calibration.cohort import load_cohort
from kiosk.calibration.run import CalibrationResult, calibrate_scores
from kiosk.calibration.schema import Calibration, DatasetInfo, EncoderInfo
from kiosk.calibration.scores import RateCount, ScoreSets, threshold_at_far
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.identity.gate import TemplateLike

BOOTSTRAP_ROUNDS = 200


@dataclass(frozen=True)
class SiteScores:
    genuine: np.ndarray  # one per enrolled frame of a person with two or more frames
    impostor: np.ndarray  # cohort template x enrolled person, and frame x every other enrolled person
    people: int  # enrolled people of this modality and encoder
    frames: int
    cohort_templates: int


def _by_person(templates: Sequence[TemplateLike], modality: str, model_sha256: str) -> dict[int, np.ndarray]:
    rows: dict[int, list[np.ndarray]] = {}
    for template in templates:
        if template.modality == modality and template.model_sha256 == model_sha256:
            vector = np.asarray(template.vector, dtype=np.float64).ravel()
            rows.setdefault(template.user_id, []).append(vector / max(float(np.linalg.norm(vector)), 1e-12))
    return {user: np.stack(vectors) for user, vectors in rows.items()}


def site_scores(templates: Sequence[TemplateLike], cohort: np.ndarray, modality: str, model_sha256: str) -> SiteScores:
    """Genuine and impostor scores of this site's enrolled frames (see the module docstring)."""
    people = _by_person(templates, modality, model_sha256)
    if not people:
        raise CalibrationError(
            f"nobody is enrolled with the active {modality} encoder", "enroll the people who use this terminal first"
        )
    cohort_rows = np.asarray(cohort, dtype=np.float64)
    genuine: list[np.ndarray] = []
    impostor: list[np.ndarray] = []
    for user, frames in people.items():
        if frames.shape[0] >= 2:
            similarity = frames @ frames.T
            np.fill_diagonal(similarity, -np.inf)
            genuine.append(similarity.max(axis=1))
        impostor.append((cohort_rows @ frames.T).max(axis=1))
        for other, other_frames in people.items():
            if other != user:
                impostor.append((other_frames @ frames.T).max(axis=1))
    if not genuine:
        raise CalibrationError(
            f"no enrolled person has two or more {modality} frames: there are no genuine scores",
            "enroll people with several frames (the enrolment screen keeps several)",
        )
    return SiteScores(
        genuine=np.concatenate(genuine),
        impostor=np.concatenate(impostor),
        people=len(people),
        frames=sum(frames.shape[0] for frames in people.values()),
        cohort_templates=int(cohort_rows.shape[0]),
    )


def trials_needed(target_far: float) -> int:
    """Impostor trials whose zero false accepts show FAR < target at 95 % (rule of three)."""
    return math.ceil(3 / target_far)


@dataclass(frozen=True)
class SiteProposal:
    modality: str
    target_far: float
    threshold: float
    far: RateCount  # on the impostor trials, with its Clopper-Pearson 95 % interval
    frr: RateCount  # on the leave-one-frame-out genuine scores (a floor)
    threshold_ci95: tuple[float, float]  # bootstrap over the impostor trials
    resolved: bool  # enough impostor trials to show the target (rule of three)
    calibration_threshold: float | None  # the active calibration's tau
    people: int
    frames: int
    cohort_templates: int
    effective_target: float  # the target the threshold was read at: lower than asked when trials are too few
    messages: list[str] = field(default_factory=list)

    @property
    def below_calibration(self) -> bool:
        return self.calibration_threshold is not None and self.threshold < self.calibration_threshold

    def as_dict(self) -> dict[str, object]:
        return {
            "modality": self.modality,
            "target_far": self.target_far,
            "threshold": self.threshold,
            "threshold_ci95": list(self.threshold_ci95),
            "far": _rate(self.far),
            "frr": _rate(self.frr),
            "resolved": self.resolved,
            "impostor_trials_needed": trials_needed(self.target_far),
            "calibration_threshold": self.calibration_threshold,
            "below_calibration": self.below_calibration,
            "people": self.people,
            "frames": self.frames,
            "cohort_templates": self.cohort_templates,
            "effective_target": self.effective_target,
            "messages": self.messages,
        }


def _rate(count: RateCount) -> dict[str, object]:
    return {"value": count.value, "errors": count.errors, "trials": count.trials, "ci95": list(count.ci95)}


def _bootstrap_threshold(impostor: np.ndarray, target_far: float, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(BOOTSTRAP_ROUNDS):
        sample = np.sort(impostor[rng.integers(0, impostor.size, impostor.size)])
        allowed = math.floor(target_far * sample.size)
        values.append(float(np.nextafter(sample[sample.size - allowed - 1], np.inf)))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def propose(
    scores: SiteScores,
    target_far: float,
    modality: str,
    calibration_threshold: float | None = None,
    seed: int = 0,
    calibration_rule: str | None = None,
) -> SiteProposal:
    """The threshold for `target_far` on this site's trials, and what the trials can and cannot show
    (`calibration_rule`: the active calibration's, which says what its tau was chosen for)."""
    sets = ScoreSets.from_arrays(scores.genuine, scores.impostor)
    trials = int(sets.impostor.size)
    needed = trials_needed(target_far)
    resolved = trials >= needed
    # Trials that cannot show the target get no false accept at all: the threshold clears every impostor seen.
    effective_target = target_far if resolved else 0.5 / trials
    point = threshold_at_far(sets, effective_target)
    messages: list[str] = []
    if not resolved:
        shown = 3 / trials
        messages.append(
            f"too few impostor trials for FAR {target_far:g}: {trials:,} trials can show FAR below about "
            f"{shown:.1e} at best (rule of three), not {target_far:g}; it needs {needed:,} "
            f"(more enrolled people, or a larger cohort). The threshold is just above the highest impostor score."
        )
    messages.append(
        f"genuine scores are {sets.genuine.size:,} leave-one-frame-out comparisons of {scores.frames:,} enrollment "
        "frames from one sitting: real probes score lower, so the FRR shown is a floor"
    )
    if calibration_threshold is not None and point.threshold < calibration_threshold:
        messages.append(
            f"the proposal {point.threshold:.4f} is below the active calibration's tau {calibration_threshold:.4f}: "
            "applying it would open the gate wider (an admin must confirm with --below-calibration)"
        )
        if calibration_rule == "fused":
            messages.append(
                "the active tau holds its FAR for probes fused over the camera's frames; this proposal holds it for "
                "single frames only (averaged frames score impostors higher), so keep the active tau unless the "
                "people enrolled here are refused"
            )
    return SiteProposal(
        modality=modality,
        target_far=target_far,
        threshold=point.threshold,
        far=point.far,
        frr=point.frr,
        threshold_ci95=_bootstrap_threshold(sets.impostor, effective_target, seed),
        effective_target=effective_target,
        resolved=resolved,
        calibration_threshold=calibration_threshold,
        people=scores.people,
        frames=scores.frames,
        cohort_templates=scores.cohort_templates,
        messages=messages,
    )


def describe_proposal(proposal: SiteProposal) -> list[str]:
    """The proposal in plain lines for the CLI and the admin screen."""
    far, frr = proposal.far, proposal.frr
    low, high = proposal.threshold_ci95
    lines = [
        f"{proposal.modality}: {proposal.people} enrolled people, {proposal.frames} frames, "
        f"{proposal.cohort_templates} cohort templates; {far.trials:,} impostor and {frr.trials:,} genuine trials",
        f"proposed tau {proposal.threshold:.4f} for target FAR {proposal.target_far:g} "
        f"(95 % bootstrap interval {low:.4f} to {high:.4f})",
        f"at that tau: FAR {far.value:.2e} ({far.errors}/{far.trials:,}; 95 % CI {far.ci95[0]:.1e} to "
        f"{far.ci95[1]:.1e}), FRR {frr.value:.2%} ({frr.errors}/{frr.trials:,}; 95 % CI {frr.ci95[0]:.2%} to "
        f"{frr.ci95[1]:.2%})",
    ]
    if proposal.calibration_threshold is not None:
        lines.append(f"active calibration tau {proposal.calibration_threshold:.4f}")
    return lines + proposal.messages


@dataclass(frozen=True)
class SiteCalibration:
    proposal: SiteProposal
    result: CalibrationResult  # the calibration file the proposal becomes when an admin applies it (<modality>-site)


def active_threshold_or_none(config: KioskConfig, modality: str, model_sha256: str) -> float | None:
    """The active calibration's tau for this encoder, or None when there is none usable (nothing to stay above)."""
    active = _active_or_none(config, modality, model_sha256)
    return active.threshold if active is not None else None


def _active_or_none(config: KioskConfig, modality: str, model_sha256: str) -> Calibration | None:
    try:
        return active_calibration(config, modality, model_sha256)
    except CalibrationError:
        return None


def calibrate_site(
    config: KioskConfig,
    templates: Sequence[TemplateLike],
    *,
    modality: str,
    encoder: EncoderInfo,
    target_far: float,
    command: str,
) -> SiteCalibration:
    """Propose tau for `target_far` from the enrolled people's frames and the shipped cohort of this encoder."""
    if modality == "palm" and config.palm.alignment_search:
        # The gate scores palm probes over their ROI's re-alignments, which raises impostor scores; the site has only
        # one stored vector per enrolled frame and cohort image, so its trials would under-state FAR.
        raise CalibrationError(
            "palm site calibration cannot score the enrolled frames as the gate does: with palm.alignment_search on, "
            "probes carry their ROI's re-alignments and the kiosk keeps no enrolment images to re-align",
            "keep the shipped palm calibration, or set palm.alignment_search = false before calibrating the site",
        )
    cohort = load_cohort(Path(config.paths.calibration_dir), modality, encoder.sha256)
    scores = site_scores(templates, cohort.vectors, modality, encoder.sha256)
    active = _active_or_none(config, modality, encoder.sha256)
    proposal = propose(
        scores,
        target_far,
        modality,
        active.threshold if active is not None else None,
        calibration_rule=active.rule if active is not None else None,
    )
    dataset = DatasetInfo(
        name="site",
        path=f"enrolled templates + {cohort.info.templates} cohort templates ({cohort.info.source})",
        protocol="scores",
        images=scores.frames,
        identities=scores.people,
    )
    result = calibrate_scores(
        scores.genuine,
        scores.impostor,
        modality=modality,
        encoder=encoder,
        benchmark="site",
        dataset=dataset,
        rule="far",
        target_far=proposal.effective_target,
        warnings=[m for m in proposal.messages if "below the active calibration" not in m],
        command=command,
    )
    return SiteCalibration(proposal, result)
