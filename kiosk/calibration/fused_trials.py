"""Fused multi-frame probe trials, and the thresholds they support at a target FAR (the gate's 'fused' rule and
the sensitive-note threshold).

The live camera never compares one crop: it fuses its last few good frames (kiosk.identity.verify.ProbeFuser),
so the owner's genuine scores are those of fused probes. Trials here copy that: each identity is enrolled from
`enrol` images (one template each; the gate takes the best), and a probe is the L2-normalised mean of `frames`
other images of one identity. Genuine trials score a probe against its own identity; impostor trials against
every other enrolled identity. A threshold holds the target FAR for every probe the fuser can make (1 .. max
frames): averaging removes an impostor's image noise too, which lifts the cosine to a look-alike's template, so
on LFW3D the probe of the most frames needs the highest threshold.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from kiosk.calibration.embed import Embeddings
from kiosk.calibration.schema import FusedGate, FusedPoint, OperatingPoint, Rate
from kiosk.calibration.scores import RateCount, ScoreAnalysis, ScoreSets, threshold_at_far
from kiosk.identity.verify import FUSE_FRAMES

FUSED_ENROL = 3  # templates per person in the gate's fused trials: the enrolment wizard keeps several poses
MIN_FUSED_IDENTITIES = 20  # fewer people with enough images say too little about an FRR to choose by it


@dataclass(frozen=True)
class FusedScores:
    frames: int
    scores: ScoreSets
    identities: int
    gallery: int


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def fused_trials(
    vectors: np.ndarray,
    identities: list[str],
    frames: tuple[int, ...],
    *,
    enrol: int = 3,
    draws: int = 20,
    seed: int = 0,
    variants: np.ndarray | None = None,
) -> dict[int, FusedScores]:
    """Genuine and impostor scores of probes fused from k images, for each k in `frames`.

    Identities with `enrol` + max(frames) images give genuine trials (the same identities and enrolment for every
    k, so the rows compare); identities with only `enrol` images are enrolled too, as impostor-only gallery.
    `variants` (n, V, d): each image's re-aligned vectors (palm.alignment_search); a probe then carries them fused
    variant by variant (kiosk.identity.palm_alignment.fuse_aligned) and scores a template as the best cosine over
    its vector and variants, as the gate does. Templates stay one vector per image.
    """
    by_identity: dict[str, list[int]] = defaultdict(list)
    for index, identity in enumerate(identities):
        by_identity[identity].append(index)
    rng = np.random.default_rng(seed)
    longest = max(frames)
    names = sorted(name for name, rows in by_identity.items() if len(rows) >= enrol)
    enrolled: dict[str, np.ndarray] = {}
    probe_pool: dict[str, np.ndarray] = {}
    for name in names:
        order = rng.permutation(np.asarray(by_identity[name]))
        enrolled[name] = order[:enrol]
        if len(order) >= enrol + longest:
            probe_pool[name] = order[enrol:]
    templates = vectors[np.concatenate([enrolled[name] for name in names])]  # (gallery * enrol, d)
    owner_of_probe: list[int] = []
    chosen: dict[int, list[np.ndarray]] = {k: [] for k in frames}
    for name, pool in probe_pool.items():
        for _ in range(draws):
            order = rng.permutation(pool)
            for k in frames:
                chosen[k].append(order[:k])  # nested: the k-frame probe extends the (k-1)-frame one
            owner_of_probe.append(names.index(name))
    owners = np.asarray(owner_of_probe)
    result: dict[int, FusedScores] = {}
    for k in frames:
        picked = np.stack(chosen[k])
        cosines = _unit(vectors[picked].mean(axis=1)) @ templates.T
        if variants is not None:  # one variant at a time: all at once would hold probes x variants x templates
            for variant in range(variants.shape[1]):
                np.maximum(cosines, _unit(variants[picked, variant].mean(axis=1)) @ templates.T, out=cosines)
        per_user = cosines.reshape(len(picked), len(names), enrol).max(axis=2)
        genuine = per_user[np.arange(len(picked)), owners]
        mask = np.ones_like(per_user, dtype=bool)
        mask[np.arange(len(picked)), owners] = False
        result[k] = FusedScores(k, ScoreSets.from_arrays(genuine, per_user[mask]), len(probe_pool), len(names))
    return result


def _rate(count: RateCount) -> Rate:
    return Rate(value=count.value, errors=count.errors, trials=count.trials, ci95=count.ci95)


@dataclass(frozen=True)
class ChosenThreshold:
    threshold: float
    target_far: float
    resolved: bool  # every frame count had at least 1/target_far impostor trials
    trade_off: list[FusedPoint]

    def at(self, frames: int) -> FusedPoint:
        return next(row for row in self.trade_off if row.frames == frames)


def choose_threshold(trials: dict[int, FusedScores], target_far: float, above: float | None = None) -> ChosenThreshold:
    """The lowest threshold that holds `target_far` for every frame count, with FAR and FRR per count.

    `above`: the gate's tau. A sensitive threshold at or below it would be ignored by the kiosk (it then falls back
    to tau + margin, kiosk.retrieval.sensitive.strict_threshold), so when tau already holds the target the result
    is the next 1e-4 step above tau.
    """
    points = {k: threshold_at_far(fused.scores, target_far) for k, fused in trials.items()}
    threshold = max(point.threshold for point in points.values())
    if above is not None and threshold <= above:
        threshold = math.floor(above * 1e4 + 1) / 1e4
    rows = _trade_off(trials, {k: point.threshold for k, point in points.items()}, threshold)
    return ChosenThreshold(threshold, target_far, all(point.resolved for point in points.values()), rows)


def _trade_off(trials: dict[int, FusedScores], at_target: dict[int, float], threshold: float) -> list[FusedPoint]:
    return [
        FusedPoint(
            frames=k,
            threshold_at_target=at_target[k],
            far=_rate(trials[k].scores.far(threshold)),
            frr=_rate(trials[k].scores.frr(threshold)),
        )
        for k in sorted(trials)
    ]


def fused_gate(trials: dict[int, FusedScores], target_far: float, floor: float, enrol: int = 3) -> FusedGate:
    """The gate's fused trials: the threshold holding `target_far` for every frame count, and FAR/FRR per count
    at the threshold the 'fused' rule applies, max(`floor`, that threshold) (`floor`: the 'strict' rule's)."""
    chosen = choose_threshold(trials, target_far)
    longest = trials[max(trials)]
    at_target = {row.frames: row.threshold_at_target for row in chosen.trade_off}
    return FusedGate(
        target_far=target_far,
        threshold=chosen.threshold,
        resolved=chosen.resolved,
        frames_fused=max(trials),
        enrol=enrol,
        identities=longest.identities,
        gallery=longest.gallery,
        trade_off=_trade_off(trials, at_target, max(floor, chosen.threshold)),
    )


def live_fused_trials(
    modality: str, search: bool, embeddings: Embeddings, identities: list[str], seed: int, warnings: list[str]
) -> dict[int, FusedScores] | None:
    """Probes fused from 1 .. the live camera's frames (FUSE_FRAMES) over the readable images, or None and why."""
    if search:
        warnings.append("no fused trials: they are not made with palm.alignment_search (the 'fused' rule is off)")
        return None
    frames = FUSE_FRAMES[modality]  # type: ignore[index]
    valid = np.flatnonzero(embeddings.valid)
    readable = [identities[i] for i in valid]
    counts = Counter(readable)
    people = sum(1 for n in counts.values() if n >= FUSED_ENROL + frames)
    if people < MIN_FUSED_IDENTITIES:
        warnings.append(
            f"no fused trials: {people} people have {FUSED_ENROL + frames}+ images, {MIN_FUSED_IDENTITIES} are needed "
            "(the 'fused' rule is off)"
        )
        return None
    vectors = embeddings.vectors[valid]
    return fused_trials(vectors, readable, tuple(range(1, frames + 1)), enrol=FUSED_ENROL, seed=seed)


def fused_operating_point(analysis: ScoreAnalysis, fused: FusedGate, strict: float) -> OperatingPoint:
    """The 'fused' rule's point: max(strict, `fused.threshold`), with the FAR and FRR of probes fused from the live
    camera's frames, which it is chosen for."""
    live = next(row for row in fused.trade_off if row.frames == fused.frames_fused)
    single = analysis.scores.frr(max(strict, fused.threshold))
    source = "strict" if strict >= fused.threshold else f"fused FAR {fused.target_far:g}"
    return OperatingPoint(
        rule="fused",
        threshold=max(strict, fused.threshold),
        far=live.far,
        frr=live.frr,
        resolved=fused.resolved,
        note=(
            f"max(strict, threshold holding FAR {fused.target_far:g} for probes of 1-{fused.frames_fused} frames) = "
            f"{source}; FAR and FRR here: probes fused from {fused.frames_fused} frames "
            f"({fused.identities} people enrolled from {fused.enrol} images); single images: FRR {single.value:.1%}"
        ),
    )
