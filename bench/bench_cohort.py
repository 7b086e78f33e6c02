"""Does one cohort-normalised threshold transfer to a population (or camera) it was not set on, better than raw?

Face: LFW3D View-2 folds (identity-disjoint). The threshold is set at a target FAR on folds 1-5 (tuning) and
measured on folds 6-10 (report, no decision touched them): FAR per fold against the target, FRR. Impostors per
fold are every different-identity pair of the fold's images; genuine pairs are pairs.txt's. A "new camera" is
simulated on two report folds (their images downscaled to 40 px, blurred and JPEG-compressed at quality 30,
then embedded again): both templates and probes come from that camera. Palm: Tongji, cohort = palms 1-50,
tuning = palms 51-75, report = palms 76-100 (each in two groups), all pairs. The cohort never overlaps an
evaluation identity. With --set-b DIR another face collection is one more new population.

Normalisations (cohort statistics of each side's cosines to the cohort templates):
  raw      cosine
  T-norm   (s - mu_probe) / sd_probe                      (probe side only)
  S-norm   mean of the probe-side and the template-side z-scores
  AS-norm  S-norm with mean/sd of each side's top-K cohort cosines (K chosen on tuning folds)
The site-calibration rows: the proposal of `kiosk.calibration.site` (enrolled frames + cohort, target FAR
1e-3) on each report fold, measured against that fold's full impostor set.

    nice -n 10 .venv/bin/python -m bench.cohort_data            # embeddings (cached)
    nice -n 10 .venv/bin/python -m bench.bench_cohort [--write-cohort]
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench import cohort_data
from bench.cohort_scores import (
    Stats,
    Trials,
    all_pairs,
    cohort_stats,
    normalise,
    pooled,
    rates,
    threshold_at,
    trials_of,
)
from kiosk.calibration.cohort import build_cohort, load_cohort, save_cohort
from kiosk.calibration.embed import encoder_name, load_embedder
from kiosk.calibration.site import propose, site_scores

RESULTS = Path(__file__).resolve().parent / "results" / "cohort.md"
TARGETS = (1e-3, 1e-4)
TOP_K_CHOICES = (25, 50, 100, 200)
READING = "## Reading and decision"
Normaliser = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Population:
    name: str
    trials: Trials
    stats: dict[str, Stats]  # "full" and "top<K>" per K
    vectors: np.ndarray  # every image's vector as this population's camera saw it
    labels: np.ndarray
    images: np.ndarray  # the population's image indices


@dataclass(frozen=True)
class Enrolled:
    """One stored template, as the gate and site calibration read it."""

    user_id: int
    modality: str
    vector: np.ndarray
    model_sha256: str


def population(
    name: str, trials: Trials, vectors: np.ndarray, labels: np.ndarray, images: np.ndarray, cohort: np.ndarray
) -> Population:
    stats = {"full": cohort_stats(vectors, cohort, None)}
    for k in TOP_K_CHOICES:
        if k < cohort.shape[0]:
            stats[f"top{k}"] = cohort_stats(vectors, cohort, k)
    return Population(name, trials, stats, vectors, labels, images)


def variant_stats(variant: str, pop: Population) -> tuple[str, Stats]:
    """(normalisation kind, the statistics it uses) for a variant name such as 'AS-norm top100'."""
    if variant.startswith("AS-norm"):
        return "S-norm", pop.stats[variant.split()[1]]
    return variant, pop.stats["full"]


def threshold_for(variant: str, pop: Population, target: float) -> float:
    kind, stats = variant_stats(variant, pop)
    return threshold_at(normalise(kind, pop.trials.impostor, pop.trials.impostor_sides, stats), target)


def measure(variant: str, pop: Population, threshold: float) -> tuple[float, float]:
    kind, stats = variant_stats(variant, pop)
    return rates(pop.trials, kind, stats, threshold)


def merge(pops: list[Population]) -> Population:
    """Populations of one camera pooled to set one threshold (distinct images, one vector array)."""
    first = pops[0]
    images = np.concatenate([p.images for p in pops])
    return Population("pooled", pooled([p.trials for p in pops]), first.stats, first.vectors, first.labels, images)


def choose_top_k(tuning: list[Population], target: float) -> str:
    """AS-norm's K, on tuning data only: the threshold set on the first half of the tuning populations whose FAR
    on the second half is nearest the target (log ratio), FRR breaking ties."""
    half = max(1, len(tuning) // 2)
    best: tuple[float, float, str] | None = None
    for k in TOP_K_CHOICES:
        name = f"AS-norm top{k}"
        if f"top{k}" not in tuning[0].stats:
            continue
        threshold = threshold_for(name, merge(tuning[:half]), target)
        results = [measure(name, pop, threshold) for pop in tuning[half:]]
        far = float(np.mean([r[0] for r in results]))
        frr = float(np.mean([r[1] for r in results]))
        key = (abs(math.log(max(far, target / 100) / target)), frr, name)
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2]


def shipped_cohort(modality: str, sha: str) -> np.ndarray:
    """The cohort as shipped (calibration/cohort-*), the one site calibration uses."""
    cfg = cohort_data.bench_config()
    return load_cohort(Path(cfg.paths.calibration_dir), modality, sha).vectors.astype(np.float64)


def face_populations() -> tuple[list[Population], list[Population], list[Population], np.ndarray, str]:
    """(tuning folds 1-5, report folds 6-10, report folds through the new camera, cohort, encoder sha256)."""
    cfg = cohort_data.bench_config()
    embedder = load_embedder(cfg, "face")
    pairs, _cohort_paths = cohort_data.face_paths(cfg)
    root = cohort_data.shared_data(cfg) / "lfw3d_frontalized"
    vectors, valid = cohort_data.embed(cfg, embedder, root, pairs.images.paths)
    clean = vectors.astype(np.float64)
    cohort = shipped_cohort("face", embedder.model_sha256)
    labels = np.unique(np.asarray(pairs.images.identities), return_inverse=True)[1]
    fold_of_pair = np.arange(pairs.first.size) // (pairs.first.size // cohort_data.LFW_FOLDS)
    folds: list[Population] = []
    camera: list[Population] = []
    for fold in range(cohort_data.LFW_FOLDS):
        in_fold = fold_of_pair == fold
        images = np.unique(np.concatenate([pairs.first[in_fold], pairs.second[in_fold]]))
        images = images[valid[images]]
        genuine = np.stack([pairs.first[in_fold & pairs.genuine], pairs.second[in_fold & pairs.genuine]], axis=1)
        genuine = genuine[np.isin(genuine[:, 0], images) & np.isin(genuine[:, 1], images)]
        name = f"LFW3D fold {fold + 1}"
        folds.append(population(name, trials_of(clean, labels, images, genuine), clean, labels, images, cohort))
        if fold in cohort_data.CAMERA_FOLDS:
            shifted = clean.copy()
            shifted[images] = cohort_data.degraded_vectors(cfg, embedder, [pairs.images.paths[i] for i in images])
            trials = trials_of(shifted, labels, images, genuine)
            camera.append(population(f"{name}, new camera", trials, shifted, labels, images, cohort))
    return folds[:5], folds[5:], camera, cohort, embedder.model_sha256


def other_face_set(folder: Path, cohort: np.ndarray, per_identity: int = 10) -> Population:
    """Another face collection (manifest.csv path,identity): every pair of at most `per_identity` images each."""
    from kiosk.calibration.data import read_manifest

    cfg = cohort_data.bench_config()
    embedder = load_embedder(cfg, "face")
    images = read_manifest(folder)
    kept: dict[str, int] = {}
    chosen = []
    for index, identity in enumerate(images.identities):
        if kept.get(identity, 0) < per_identity:
            kept[identity] = kept.get(identity, 0) + 1
            chosen.append(index)
    paths = [images.paths[i] for i in chosen]
    vectors, valid = cohort_data.embed(cfg, embedder, folder, paths)
    labels = np.unique(np.asarray([images.identities[i] for i in chosen]), return_inverse=True)[1]
    indices = np.flatnonzero(valid)
    clean = vectors.astype(np.float64)
    trials = all_pairs(clean, labels, indices)
    return population(f"{folder.name} (other face set)", trials, clean, labels, indices, cohort)


def palm_populations() -> tuple[list[Population], list[Population], np.ndarray, str]:
    """(tuning: palms 51-75 in two groups, report: palms 76-100 in two groups, cohort palms 1-50, sha256)."""
    cfg = cohort_data.bench_config()
    embedder = load_embedder(cfg, "palm")
    evaluation, palm_ids, _cohort_paths = cohort_data.palm_split(cfg)
    root = cohort_data.shared_data(cfg) / "palm_tongji_palmnet"
    vectors, valid = cohort_data.embed(cfg, embedder, root, evaluation)
    clean = vectors.astype(np.float64)
    cohort = shipped_cohort("palm", embedder.model_sha256)
    labels = np.unique(np.asarray(palm_ids), return_inverse=True)[1]
    palms = sorted(set(palm_ids))
    quarter = -(-len(palms) // 4)
    pops = []
    for start in range(0, len(palms), quarter):
        group = set(palms[start : start + quarter])
        images = np.array([i for i, p in enumerate(palm_ids) if p in group and valid[i]])
        name = f"Tongji palms {int(min(group))}-{int(max(group))}"
        pops.append(population(name, all_pairs(clean, labels, images), clean, labels, images, cohort))
    return pops[:2], pops[2:], cohort, embedder.model_sha256


@dataclass(frozen=True)
class SiteResult:
    threshold: float
    interval: tuple[float, float]
    trials: int
    resolved: bool
    far: float  # on the population's every different-identity pair
    frr: float
    people: int


def site_row(pop: Population, cohort: np.ndarray, target: float, modality: str, sha: str) -> SiteResult:
    """Site calibration on one population: its people with two or more images enrolled (every image a frame)."""
    counts = np.bincount(pop.labels[pop.images])
    enrolled = [i for i in pop.images if counts[pop.labels[i]] >= 2]
    templates = [Enrolled(int(pop.labels[i]), modality, pop.vectors[i], sha) for i in enrolled]
    proposal = propose(site_scores(templates, cohort, modality, sha), target, modality)
    far, frr = measure("raw", pop, proposal.threshold)
    return SiteResult(
        proposal.threshold, proposal.threshold_ci95, proposal.far.trials, proposal.resolved, far, frr, proposal.people
    )


def gate_way_cell(trials: tuple[np.ndarray, np.ndarray], tau: float, target: float) -> str:
    genuine, impostor = trials
    return f"{tau:.4f}: {float((impostor >= tau).mean()) / target:.2f}× / {float((genuine < tau).mean()):.1%}"


def gate_way_rows(
    modality: str, tuning: list[Population], pops: list[Population], cohort: np.ndarray, sha: str, shipped: float | None
) -> list[str]:
    """A site the way a terminal lives it: people with two or more images enrol all but their last image, which
    later comes as their probe; people with one image are strangers. Site calibration sees only the enrolled
    frames and the cohort; FAR and FRR are then counted the gate's way (a probe against each enrolled person's
    best frame) on those held-out probes."""
    rows = []
    target = 1e-3
    tuned = threshold_for("raw", merge(tuning), target)
    for pop in pops:
        labels = pop.labels[pop.images]
        counts = np.bincount(labels)
        last = {int(label): int(index) for index, label in zip(pop.images, labels, strict=True)}
        frames: dict[int, list[int]] = {}
        for index, label in zip(pop.images, labels, strict=True):
            if counts[label] >= 2 and last[int(label)] != int(index):
                frames.setdefault(int(label), []).append(int(index))
        probes = [(last[label], label) for label in frames] + [
            (int(index), -1) for index, label in zip(pop.images, labels, strict=True) if counts[label] == 1
        ]
        templates = [Enrolled(label, modality, pop.vectors[i], sha) for label, rows_ in frames.items() for i in rows_]
        proposal = propose(site_scores(templates, cohort, modality, sha), target, modality)
        best = {label: pop.vectors[rows_] @ pop.vectors[[p for p, _ in probes]].T for label, rows_ in frames.items()}
        genuine: list[float] = []
        impostor: list[float] = []
        for column, (_probe, owner) in enumerate(probes):
            for label, similarity in best.items():
                (genuine if label == owner else impostor).append(float(similarity[:, column].max()))
        trials = (np.asarray(genuine), np.asarray(impostor))
        shipped_cell = gate_way_cell(trials, shipped, target) if shipped is not None else "–"
        rows.append(
            f"| {pop.name} | {len(frames)} | {trials[0].size:,} / {trials[1].size:,} "
            f"| {gate_way_cell(trials, proposal.threshold, target)}{'' if proposal.resolved else ' (too few trials)'} "
            f"| {gate_way_cell(trials, tuned, target)} | {shipped_cell} |"
        )
    return rows


def log_error(far: float, target: float, trials: int) -> float:
    """|log10(FAR / target)|, a FAR of zero counted as half an error."""
    return abs(math.log10(max(far, 0.5 / trials) / target))


def transfer_rows(
    modality: str, tuning: list[Population], report: list[Population], camera: list[Population], variants: list[str]
) -> list[str]:
    rows = []
    for target in TARGETS:
        for variant in variants:
            threshold = threshold_for(variant, merge(tuning), target)
            tune_far, tune_frr = measure(variant, merge(tuning), threshold)
            per_fold = [measure(variant, pop, threshold) for pop in report]
            shifted = [measure(variant, pop, threshold) for pop in camera]
            pooled_far, pooled_frr = measure(variant, merge(report), threshold)
            errors = [
                log_error(far, target, p.trials.impostor.size) for (far, _), p in zip(per_fold, report, strict=True)
            ]
            camera_errors = [
                log_error(far, target, p.trials.impostor.size) for (far, _), p in zip(shifted, camera, strict=True)
            ]
            fars = [far / target for far, _ in per_fold]
            camera_error = f"{np.mean(camera_errors):.3f}" if camera_errors else "–"
            camera_cell = ", ".join(f"{far / target:.2f}× / {frr:.1%}" for far, frr in shifted) or "–"
            rows.append(
                f"| {modality} | {variant} | {target:g} | {threshold:.4f} | {tune_far / target:.2f}× / {tune_frr:.1%} "
                f"| {pooled_far / target:.2f}× / {pooled_frr:.1%} | {min(fars):.2f}–{max(fars):.2f}× "
                f"| {np.mean(errors):.3f} | {camera_cell} | {camera_error} |"
            )
    return rows


def site_rows(
    modality: str, tuning: list[Population], pops: list[Population], cohort: np.ndarray, sha: str, shipped: float | None
) -> list[str]:
    rows = []
    target = 1e-3
    tuned = threshold_for("raw", merge(tuning), target)
    for pop in pops:
        site = site_row(pop, cohort, target, modality, sha)
        tuned_far, tuned_frr = measure("raw", pop, tuned)
        shipped_cell = "–"
        if shipped is not None:
            shipped_far, shipped_frr = measure("raw", pop, shipped)
            shipped_cell = f"{shipped:.4f}: {shipped_far / target:.2f}× / {shipped_frr:.1%}"
        low, high = site.interval
        rows.append(
            f"| {pop.name} | {site.people} | {site.trials:,} {'' if site.resolved else '(too few)'} "
            f"| {site.threshold:.4f} [{low:.4f}, {high:.4f}] | {site.far / target:.2f}× / {site.frr:.1%} "
            f"| {tuned:.4f}: {tuned_far / target:.2f}× / {tuned_frr:.1%} | {shipped_cell} |"
        )
    return rows


def write_cohorts() -> None:
    cfg = cohort_data.bench_config()
    command = "python -m bench.bench_cohort --write-cohort"
    out = Path(cfg.paths.calibration_dir)
    for modality in ("face", "palm"):
        embedder = load_embedder(cfg, modality)
        if modality == "face":
            _pairs, paths = cohort_data.face_paths(cfg)
            root = cohort_data.shared_data(cfg) / "lfw3d_frontalized"
            source = f"LFW3D: {cohort_data.FACE_COHORT_IDENTITIES} identities outside pairs.txt, one image each"
        else:
            _evaluation, _ids, paths = cohort_data.palm_split(cfg)
            root = cohort_data.shared_data(cfg) / "palm_tongji_palmnet"
            source = (
                f"Tongji: palms 1-{cohort_data.PALM_COHORT_PALMS} (the tuning half), "
                f"{cohort_data.PALM_COHORT_PER_PALM} images each"
            )
        cache = cohort_data.own_cache(cfg, embedder, root, paths)
        name = encoder_name(cfg, modality, embedder)
        cohort = build_cohort(embedder, paths, encoder=name, source=source, command=command, cache=cache)
        path = save_cohort(cohort, out)
        print(f"wrote {path} ({(out / cohort.info.vectors_file).stat().st_size:,} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-cohort", action="store_true", help="Write calibration/cohort-*.json and .npy.")
    parser.add_argument("--set-b", type=Path, default=None, help="Another face set (manifest.csv) as a new population.")
    args = parser.parse_args()
    if args.write_cohort:
        write_cohorts()
    from kiosk.calibration.active import calibration_path, load_calibration

    cfg = cohort_data.bench_config()
    shipped = load_calibration(calibration_path(cfg, "face"), "face").threshold
    tuning, report, camera, face_cohort, face_sha = face_populations()
    if args.set_b is not None:
        camera.append(other_face_set(args.set_b, face_cohort))
    k_face = choose_top_k(tuning, 1e-3)
    palm_tuning, palm_report, palm_cohort, palm_sha = palm_populations()
    k_palm = choose_top_k(palm_tuning, 1e-3)
    header = (
        "| modality | scores | target FAR | threshold (set on tuning) | tuning FAR (×target) / FRR "
        "| report FAR (×target) / FRR, pooled | report FAR per fold | mean abs log10(FAR/target), report folds "
        "| new camera FAR (×target) / FRR per fold | mean abs log10, new camera |"
    )
    lines = [
        "# Impostor-cohort score normalisation and site calibration",
        "",
        f"Command: `nice -n 10 .venv/bin/python -m bench.bench_cohort{' --write-cohort' if args.write_cohort else ''}` "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine shared, load {os.getloadavg()[0]:.1f}; 1 encoder thread).",
        "",
        (__doc__ or "").split("\n\n")[0].replace("\n", " "),
        "",
        "Scores: raw = cosine; T-norm = (s - mu_probe) / sd_probe over the probe's cosines to the cohort; S-norm = "
        "mean of the probe-side and template-side z-scores; AS-norm = S-norm over each side's top-K cohort cosines. "
        "FAR and FRR are on single image pairs; ×target is FAR / target FAR. Embeddings: "
        "`nice -n 10 .venv/bin/python -m bench.cohort_data` first (cached).",
        "",
        f"Face cohort: {face_cohort.shape[0]} LFW3D identities outside pairs.txt; tuning = folds 1-5, report = "
        f"folds 6-10, new camera = folds {', '.join(str(f + 1) for f in cohort_data.CAMERA_FOLDS)} degraded. "
        f"Palm cohort: {palm_cohort.shape[0]} templates of palms 1-50; tuning = palms 51-75, report = 76-100 "
        "(no new-camera set for palm). AS-norm's K chosen on tuning data only "
        f"(face {k_face.split()[1]}, palm {k_palm.split()[1]}).",
        "",
        header,
        "| " + " | ".join(["---"] * 10) + " |",
    ]
    variants = ["raw", "T-norm", "S-norm"]
    lines += transfer_rows("face", tuning, report, camera, [*variants, k_face])
    lines += transfer_rows("palm", palm_tuning, palm_report, [], [*variants, k_palm])
    lines += [
        "",
        "## Site calibration (raw cosine, target FAR 1e-3)",
        "",
        "Each report population acts as a site: its people with two or more images are enrolled (every image a "
        "frame); `kiosk.calibration.site` proposes tau from leave-one-frame-out genuine scores and impostor scores "
        "against the cohort and the other enrolled people; FAR / FRR are then measured on the population's every "
        "different-identity pair and its genuine pairs. For comparison: the raw threshold set on the tuning data, "
        f"and the shipped face tau ({shipped:.4f}, set on all of LFW3D including these folds).",
        "",
        "| site | enrolled people | site impostor trials | proposed tau [95 % bootstrap] | FAR (×1e-3) / FRR at "
        "the proposal | tuning tau: FAR / FRR | shipped tau: FAR / FRR |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += site_rows("face", tuning, [*report, *camera], face_cohort, face_sha, shipped)
    lines += site_rows("palm", palm_tuning, palm_report, palm_cohort, palm_sha, None)
    lines += [
        "",
        "## Site calibration judged the gate's way (held-out probes, target FAR 1e-3)",
        "",
        "People with two or more images enrol all but their last image, which comes later as their probe; people "
        "with one image are strangers whose image probes every enrolled person. The proposal sees only the enrolled "
        "frames and the cohort. FAR / FRR count a probe against each enrolled person's best frame, as the gate does.",
        "",
        "| site | enrolled people | genuine / impostor probe trials | site proposal: FAR (×1e-3) / FRR "
        "| tuning tau: FAR / FRR | shipped tau: FAR / FRR |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += gate_way_rows("face", tuning, [*report, *camera], face_cohort, face_sha, shipped)
    lines += gate_way_rows("palm", palm_tuning, palm_report, palm_cohort, palm_sha, None)
    previous = RESULTS.read_text(encoding="utf-8") if RESULTS.is_file() else ""
    reading = previous[previous.find(READING) :] if READING in previous else ""  # the hand-written part stays
    RESULTS.write_text("\n".join(lines) + "\n" + ("\n" + reading if reading else ""), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
