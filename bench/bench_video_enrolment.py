"""Enrolment from a short video into pose-diverse templates, and quality-weighted probe fusion (issues #35.3, #38.2).

    nice -n 10 .venv/bin/python -m bench.bench_video_enrolment [--draws 10]

Compares how a person's face templates are made (one mean template; every wizard frame a template, as the kiosk
stores today; TEMPLATES_PER_PERSON pose-diverse quality-weighted templates, bench/video_templates.py) and how probe
frames are fused (plain mean, as ProbeFuser does today; quality-weighted mean), with the gate's own score (max cosine
over a person's templates, kiosk.identity.gate.user_scores) at the shipped gate tau and sensitive threshold, and at
equal FAR (each template rule at its own threshold holding the target FAR on LFW3D's tuning half).

Face video: the clip of bench_sensitive_threshold's "enrolled as the kiosk enrols" section (same shots, phases,
live fusion windows and step-up replay); enrolment from one shot and probes from the other, or enrolment from the
first half of both shots (both poses) and probes from the second halves. LFW3D: identities with >= 4 crops (at most
20 each), split by a hash of the name into a tuning half and a report half; per identity min(5, n - 1) random crops
enrol, the rest probe (single crops, and 5-crop fused probes when 5 are left); impostors: every probe against every
other enrolled identity of its half. Quality on LFW3D crops is sharpness only (aligned frontalized crops).
"""

from __future__ import annotations

import argparse
import os
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from bench.bench_sensitive_threshold import capped
from bench.common import table, write_results
from bench.face_video import (
    DIRECTION_LABELS,
    VIDEO_METHODS,
    Frame,
    analyse_clip,
    probe_directions,
    video_probes,
)
from bench.sensitive_video import VIDEO_FPS, VIDEO_PHASES, VIDEO_STEP
from bench.video_templates import (
    TEMPLATES_PER_PERSON,
    crop_sharpness,
    diverse_templates,
    quality_weight,
    weighted_mean,
)
from kiosk.app.live import STEP_UP_FRAMES, STEP_UP_WINDOW_S
from kiosk.calibration.active import active_threshold
from kiosk.calibration.data import read_manifest
from kiosk.calibration.embed import embed_paths, embedding_cache, load_embedder, load_image
from kiosk.calibration.scores import RateCount, ScoreSets, threshold_at_far
from kiosk.calibration.sensitive import calibrated_sensitive_threshold
from kiosk.config import KioskConfig, load_config
from kiosk.identity.face import FaceEmbedder
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S

TARGET_FAR = {"tau": 1e-4, "sensitive": 1e-5}  # what the shipped gate tau and sensitive threshold were chosen at
LFW_ENROL = 5
LFW_FUSED = 5
SPOT_CHECK = 10  # cached LFW3D embeddings re-embedded to check the cache


# ---- scoring ----------------------------------------------------------------------------------------------


def person_scores(probes: np.ndarray, templates: np.ndarray, owners: np.ndarray, people: int) -> np.ndarray:
    """(probes, people) max cosine over each person's templates, as the gate scores; owners[i]: template i's person."""
    cosines = np.asarray(probes, np.float64) @ np.asarray(templates, np.float64).T
    out = np.full((len(probes), people), -1.0)
    for person in range(people):
        columns = owners == person
        if columns.any():
            out[:, person] = cosines[:, columns].max(axis=1)
    return out


def rate(errors: int, trials: int) -> str:
    count = RateCount(errors, trials)
    low, high = count.ci95
    if trials and count.value < 0.01:
        return f"{count.value:.1e} ({errors}/{trials}) [{low:.1e}, {high:.1e}]"
    return f"{100 * count.value:.1f} % ({errors}/{trials}) [{100 * low:.1f}, {100 * high:.1f}]"


# ---- face video ---------------------------------------------------------------------------------------------

# the LFW3D template rule each video enrolment follows, for its equal-FAR threshold
LFW_RULE_OF = {
    "mean": "mean",
    "today": "today",
    "diverse_wizard": "diverse",
    "mean_video": "mean",
    "diverse_video_2": "diverse_2",
    "video_every": "today",
    "diverse_video": "diverse",
}


def video_section(
    frames: list[Frame], model_sha256: str, tau: float, sensitive: float, equal_far: dict[str, dict[str, float]]
) -> tuple[str, dict[str, Any]]:
    shots, directions = probe_directions(frames)
    # the audience cutaways' faces are small or beside others: the requester is someone else in this many frames
    others = [f for f in frames if f.vector is not None and not f.owner]
    genuine: dict[tuple[str, str, bool, str], list[float]] = defaultdict(list)
    templates_kept: dict[str, list[int]] = defaultdict(list)
    for direction, (shot, probed) in directions.items():
        for phase in range(VIDEO_PHASES):
            analysed = frames[phase::VIDEO_STEP]
            enrol_shot = [f for f in shot if f.index % VIDEO_STEP == phase]
            probes = {weighted: video_probes(analysed, probed, weighted) for weighted in (False, True)}
            for method, (_, choose, make) in VIDEO_METHODS.items():
                templates = make(choose(enrol_shot), model_sha256)
                templates_kept[method].append(len(templates))
                for weighted, kinds in probes.items():
                    for kind, vectors in kinds.items():
                        for vector in vectors:
                            score = -1.0 if vector is None else float(np.max(templates @ vector))
                            genuine[(direction, method, weighted, kind)].append(score)
    rows: list[list[str]] = []
    figures: dict[str, Any] = {}
    for direction in directions:
        for method, (label, _, _) in VIDEO_METHODS.items():
            for weighted in (False, True):
                question = np.asarray(genuine[(direction, method, weighted, "question")])
                step_up = np.asarray(genuine[(direction, method, weighted, "step-up")])
                key = f"video.{direction}.{method}.{'weighted' if weighted else 'plain'}"
                figures[f"{key}.frr_tau_question"] = float((question < tau).mean())
                figures[f"{key}.frr_sensitive_question"] = float((question < sensitive).mean())
                figures[f"{key}.frr_sensitive_step_up"] = float((step_up < sensitive).mean())
                at = list(directions).index(direction) * VIDEO_PHASES
                kept = templates_kept[method][at : at + VIDEO_PHASES]
                rows.append(
                    [
                        DIRECTION_LABELS[direction],
                        f"{label} (templates {'/'.join(map(str, kept))})",
                        "quality-weighted" if weighted else "plain mean (today)",
                        f"{np.median(question):.3f}",
                        rate(int((question < tau).sum()), len(question)),
                        rate(int((question < sensitive).sum()), len(question)),
                        rate(int((step_up < sensitive).sum()), len(step_up)),
                    ]
                )
    equal_rows: list[list[str]] = []
    for direction in directions:
        for method, (label, _, _) in VIDEO_METHODS.items():
            thresholds = equal_far[LFW_RULE_OF[method]]
            question = np.asarray(genuine[(direction, method, False, "question")])
            step_up = np.asarray(genuine[(direction, method, False, "step-up")])
            key = f"video.{direction}.{method}.equal_far"
            figures[f"{key}.frr_1e-4_question"] = float((question < thresholds["tau"]).mean())
            figures[f"{key}.frr_1e-5_question"] = float((question < thresholds["sensitive"]).mean())
            figures[f"{key}.frr_1e-5_step_up"] = float((step_up < thresholds["sensitive"]).mean())
            equal_rows.append(
                [
                    DIRECTION_LABELS[direction],
                    label,
                    f"{thresholds['tau']:.4f} / {thresholds['sensitive']:.4f}",
                    rate(int((question < thresholds["tau"]).sum()), len(question)),
                    rate(int((question < thresholds["sensitive"]).sum()), len(question)),
                    rate(int((step_up < thresholds["sensitive"]).sum()), len(step_up)),
                ]
            )
    text = "\n".join(
        [
            "## Face video (one clip, one person)",
            "",
            f"Clip `short_hamilton_clip.mp4`, {len(frames)} frames; his shots: "
            + ", ".join(f"frames {s[0].index}-{s[-1].index}" for s in shots)
            + f". Analysed at {VIDEO_FPS / VIDEO_STEP:.0f} frames/s, replayed {VIDEO_PHASES} times (each phase of "
            f"the 1-in-{VIDEO_STEP} frame choice). Enrolment from one shot; probes one per analysed frame showing him "
            f"in the other shot(s): the question's probe ({FUSE_FRAMES['face']} frames, {FUSE_MAX_AGE_S['face']:.0f} "
            f"s) and the step-up's ({STEP_UP_FRAMES} frames, {STEP_UP_WINDOW_S:.0f} s). Gate tau {tau:.4f}, "
            f"sensitive threshold {sensitive:.4f}. Intervals: Clopper-Pearson 95 % over probes, which are "
            "consecutive frames of one person in one or two shots, so the real uncertainty is much wider.",
            "",
            table(
                [
                    "face video: enrol / probe",
                    "templates (count per replay)",
                    "probe fusion",
                    "median question-probe score",
                    "FRR at gate tau, question probe [95 % CI]",
                    "FRR at sensitive threshold, question probe [95 % CI]",
                    "FRR at sensitive threshold, step-up [95 % CI]",
                ],
                rows,
            ),
            "",
            f"No video FAR: only {len(others)} analysed frame(s) of the clip have a usable face that is not his (the "
            "audience cutaways' faces are small or beside others), so FAR comes from LFW3D below.",
            "",
            "The same video probes (plain mean, as the kiosk fuses) at equal FAR: each template rule at its own "
            "threshold holding FAR 1e-4 (the gate's target) and 1e-5 (the sensitive target) on LFW3D's tuning half "
            "(next section), so a rule cannot win by scoring everyone higher:",
            "",
            table(
                [
                    "face video: enrol / probe",
                    "templates",
                    "thresholds at FAR 1e-4 / 1e-5 (cosine)",
                    "FRR at FAR-1e-4 threshold, question probe [95 % CI]",
                    "FRR at FAR-1e-5 threshold, question probe [95 % CI]",
                    "FRR at FAR-1e-5 threshold, step-up [95 % CI]",
                ],
                equal_rows,
            ),
        ]
    )
    return text, figures


# ---- LFW3D ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Crops:
    vectors: np.ndarray
    identities: list[str]
    weights: np.ndarray  # quality weight from the crop's sharpness


def cached_embeddings(
    config: KioskConfig, embedder: Any, folder: Path, paths: list[Path]
) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, valid) from the calibration embedding cache by path, whatever the files' time stamps (the shared
    data's images were re-written with unchanged bytes during this session), checked by re-embedding SPOT_CHECK of
    them; images not in the cache are embedded."""
    cache = embedding_cache(config, embedder, folder).path
    stored: dict[str, np.ndarray] = {}
    if cache.is_file():
        with np.load(cache) as data:
            names, vectors, valid = data["paths"].tolist(), data["vectors"], data["valid"]
        stored = {name: vectors[i] for i, name in enumerate(names) if valid[i]}
    missing = [p for p in paths if str(p) not in stored]
    fresh = embed_paths(embedder, missing)
    for path, vector, ok in zip(missing, fresh.vectors, fresh.valid, strict=True):
        if ok:
            stored[str(path)] = vector
    spot = [paths[i] for i in np.linspace(0, len(paths) - 1, SPOT_CHECK).round().astype(int)]
    checked = embed_paths(embedder, spot)
    for path, vector, ok in zip(spot, checked.vectors, checked.valid, strict=True):
        if ok and str(path) in stored and float(vector @ stored[str(path)]) < 0.9999:
            raise SystemExit(f"the embedding cache disagrees with the encoder on {path}: re-embed")
    dimension = embedder.dimension
    matrix = np.stack([stored.get(str(p), np.zeros(dimension, np.float32)) for p in paths])
    return matrix, np.asarray([str(p) in stored for p in paths])


def lfw_crops(config: KioskConfig, embedder: Any, folder: Path, min_face_px: int) -> Crops:
    images = read_manifest(folder)
    paths, identities = capped(images.paths, images.identities, 4)
    vectors, valid = cached_embeddings(config, embedder, folder, paths)
    keep = np.flatnonzero(valid)
    # aligned frontalized crops: size and turn carry nothing, so the weight is sharpness alone
    weights = np.asarray(
        [quality_weight(crop_sharpness(load_image(paths[i])), 2 * min_face_px, 0.0) for i in keep], np.float64
    )
    return Crops(vectors[keep], [identities[i] for i in keep], weights)


def tuning_half(name: str) -> bool:
    return zlib.crc32(name.encode()) % 2 == 0


LFW_METHODS: dict[str, str] = {
    "mean": f"one template: mean of the {LFW_ENROL} enrolment crops",
    "today": f"today: each of the {LFW_ENROL} enrolment crops a template",
    "diverse_plain": f"{TEMPLATES_PER_PERSON} pose-diverse templates, plain means",
    "diverse": f"new: {TEMPLATES_PER_PERSON} pose-diverse quality-weighted templates",
    "diverse_2": "2 pose-diverse quality-weighted templates",
}


def lfw_templates(method: str, vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    if method == "mean":
        return weighted_mean(vectors)[None, :]
    if method == "today":
        return vectors
    if method == "diverse_plain":
        return diverse_templates(vectors, None)
    if method == "diverse_2":
        return diverse_templates(vectors, weights, 2)
    return diverse_templates(vectors, weights)


def lfw_split(
    crops: Crops, tuning: bool, draws: int, seed: int = 0
) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """(method, probe kind) -> (genuine scores, impostor scores) on one half of the identities."""
    by_identity: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(crops.identities):
        if tuning_half(name) == tuning:
            by_identity[name].append(index)
    rng = np.random.default_rng(seed)
    names = sorted(by_identity)
    enrol: list[np.ndarray] = []
    probes: dict[str, list[tuple[np.ndarray, int]]] = defaultdict(list)  # kind -> (crop indices, owner)
    for person, name in enumerate(names):
        order = rng.permutation(np.asarray(by_identity[name]))
        count = min(LFW_ENROL, len(order) - 1)
        enrol.append(order[:count])
        rest = order[count:]
        probes["single crop"] += [(np.asarray([i]), person) for i in rest]
        if len(rest) >= LFW_FUSED:
            probes[f"{LFW_FUSED} crops fused"] += [(rng.permutation(rest)[:LFW_FUSED], person) for _ in range(draws)]
    out: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for method in LFW_METHODS:
        made = [lfw_templates(method, crops.vectors[rows], crops.weights[rows]) for rows in enrol]
        templates = np.concatenate(made)
        owners = np.concatenate([np.full(len(t), person) for person, t in enumerate(made)])
        for kind, chosen in probes.items():
            for weighted in (False, True):
                if kind == "single crop" and weighted:
                    continue  # one crop: nothing to weigh
                vectors = np.stack(
                    [
                        weighted_mean(crops.vectors[rows], crops.weights[rows] if weighted else None)
                        for rows, _ in chosen
                    ]
                )
                who = np.asarray([person for _, person in chosen])
                scores = person_scores(vectors, templates, owners, len(names))
                mask = np.ones_like(scores, dtype=bool)
                mask[np.arange(len(who)), who] = False
                label = kind if kind == "single crop" else f"{kind}, {'quality-weighted' if weighted else 'plain mean'}"
                out[(method, label)] = (scores[np.arange(len(who)), who], scores[mask])
    return out


LIVE_KINDS = ("single crop", f"{LFW_FUSED} crops fused, plain mean")  # the probes a live threshold must hold for


def equal_far_thresholds(
    scores: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]],
) -> dict[str, dict[str, float]]:
    """Per template rule and target ("tau" 1e-4, "sensitive" 1e-5): the lowest threshold holding the target FAR for
    both live probe kinds (as the sensitive calibration holds it for every frame count)."""
    out: dict[str, dict[str, float]] = {}
    for method in LFW_METHODS:
        out[method] = {
            name: max(
                threshold_at_far(ScoreSets.from_arrays(*scores[(method, kind)]), target).threshold
                for kind in LIVE_KINDS
            )
            for name, target in TARGET_FAR.items()
        }
    return out


def lfw_section(
    crops: Crops, tau: float, sensitive: float, draws: int
) -> tuple[str, dict[str, Any], dict[str, dict[str, float]]]:
    rows: list[list[str]] = []
    figures: dict[str, Any] = {}
    halves = {tuning: lfw_split(crops, tuning, draws) for tuning in (True, False)}
    for tuning, results in halves.items():
        half = "tuning half" if tuning else "report half"
        for (method, kind), (genuine, impostor) in results.items():
            key = f"lfw3d.{'tuning' if tuning else 'report'}.{method}.{kind}"
            cells = []
            for name, threshold in (("tau", tau), ("sensitive", sensitive)):
                far = int((impostor >= threshold).sum())
                frr = int((genuine < threshold).sum())
                figures[f"{key}.far_{name}"] = far / len(impostor)
                figures[f"{key}.frr_{name}"] = frr / len(genuine)
                flag = " (above target)" if far / len(impostor) > TARGET_FAR[name] else ""
                cells += [rate(frr, len(genuine)), rate(far, len(impostor)) + flag]
            rows.append([half, LFW_METHODS[method], kind, *cells])
    chosen = equal_far_thresholds(halves[True])
    equal_rows: list[list[str]] = []
    for method, thresholds in chosen.items():
        for name, threshold in thresholds.items():
            cells = []
            for kind in LIVE_KINDS:
                genuine, impostor = halves[False][(method, kind)]
                far, frr = int((impostor >= threshold).sum()), int((genuine < threshold).sum())
                figures[f"lfw3d.report.equal_far_{name}.{method}.{kind}.frr"] = frr / len(genuine)
                figures[f"lfw3d.report.equal_far_{name}.{method}.{kind}.far"] = far / len(impostor)
                cells += [rate(frr, len(genuine)), rate(far, len(impostor))]
            equal_rows.append([LFW_METHODS[method], f"{TARGET_FAR[name]:.0e}", f"{threshold:.4f}", *cells])
    text = "\n".join(
        [
            "## LFW3D (identities with >= 4 crops)",
            "",
            f"Per identity min({LFW_ENROL}, n - 1) random crops enrol, the others probe: each single crop, and "
            f"{draws} random {LFW_FUSED}-crop fused probes per identity with {LFW_FUSED} crops left. Impostor trials: "
            "every probe against every other identity of its half (max over that identity's templates). Target FAR: "
            f"{TARGET_FAR['tau']:.0e} at gate tau {tau:.4f}, {TARGET_FAR['sensitive']:.0e} at the sensitive threshold "
            f"{sensitive:.4f}. The template count ({TEMPLATES_PER_PERSON}) and the weights were fixed before this "
            "run; the tuning half is where a choice between rows may be made, the report half confirms it.",
            "",
            table(
                [
                    "LFW3D half",
                    "templates",
                    "probe",
                    "FRR at gate tau [95 % CI]",
                    "FAR at gate tau [95 % CI]",
                    "FRR at sensitive threshold [95 % CI]",
                    "FAR at sensitive threshold [95 % CI]",
                ],
                rows,
            ),
            "",
            "At equal FAR: each template rule gets its own threshold, the lowest holding the target FAR on the tuning "
            "half for single-crop and 5-crop fused probes alike; FAR and FRR on the report half at that threshold "
            "(plain-mean probes).",
            "",
            table(
                [
                    "templates",
                    "target FAR",
                    "threshold from the tuning half (cosine)",
                    "report half: FRR, single crop [95 % CI]",
                    "report half: FAR, single crop [95 % CI]",
                    f"report half: FRR, {LFW_FUSED} crops fused [95 % CI]",
                    f"report half: FAR, {LFW_FUSED} crops fused [95 % CI]",
                ],
                equal_rows,
            ),
        ]
    )
    return text, figures, chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10, help="fused LFW3D probes per identity")
    args = parser.parse_args()
    config = load_config(path=None)
    data = config.paths.eval_data_dir
    embedder = cast(FaceEmbedder, load_embedder(config, "face"))
    tau = active_threshold(config, "face", embedder.model_sha256)
    sensitive = calibrated_sensitive_threshold(Path(config.paths.calibration_dir), "face", embedder.model_sha256)
    if sensitive is None:
        raise SystemExit("no face sensitive threshold for this encoder: run bench.bench_sensitive_threshold")
    min_face_px = config.face.min_face_px
    crops = lfw_crops(config, embedder, data / "lfw3d_frontalized", min_face_px)
    lfw_text, figures, chosen = lfw_section(crops, tau, sensitive, args.draws)
    frames = analyse_clip(embedder, data / "face_video", min_face_px)
    video_text, video_figures = video_section(frames, embedder.model_sha256, tau, sensitive, chosen)
    figures.update(video_figures)
    print(video_text, lfw_text, sep="\n\n")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    shared = f"Machine shared with other jobs (load average {load} at the end); the figures are counts, not timings."
    write_results("video_enrolment", figures, f"{shared}\n\n{video_text}\n\n{lfw_text}")


if __name__ == "__main__":
    main()
