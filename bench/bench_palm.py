"""Palm verification on Tongji ROIs (all pairs), and encoding time: OpenVINO vs ONNX Runtime vs numpy.

.venv/bin/python -m bench.bench_palm [--timing-images 200]

Every genuine and every impostor pair of the PalmNet Tongji ROIs the terminal's capture gates accept is scored
by cosine (the refused ROIs are failures to acquire: the kiosk asks for another scan); the same for all 907 ROIs
with the gates off, side by side. The encoder's parameters were chosen on palms 1-30 only; figures are given for
those palms, for the held-out palms 31-100, and for all.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench.common import percentiles_ms, table, write_results
from kiosk.config import load_config
from kiosk.errors import KioskError
from kiosk.identity.gabor import GaborCodeParams
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder
from kiosk.identity.palm_encoders import ReferenceCompCodeEncoder, compcode_params
from kiosk.identity.palm_roi import prepare_roi

TUNE_PALMS = range(1, 31)
PUBLISHED = [  # Tongji contactless, closed-set verification, as re-evaluated in the LDONet paper
    ("CompCode (LDONet re-evaluation)", 0.000667),
    ("BOCV (LDONet re-evaluation)", 0.000253),
]


def load_tongji(data_dir: Path) -> tuple[list[str], np.ndarray, list[np.ndarray]]:
    root = data_dir / "palm_tongji_palmnet"
    rows = list(csv.DictReader((root / "manifest.csv").open()))
    images = []
    for row in rows:
        image = cv2.imread(str(root / row["path"]))
        if image is None:
            raise SystemExit(f"cannot read {root / row['path']}")
        images.append(image)
    return [Path(r["path"]).stem for r in rows], np.array([int(r["palm_id"]) for r in rows]), images


def verification(vectors: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """All-pairs verification figures: EER (fraction), TAR at FAR 1e-3 / 1e-4, and score summaries."""
    scores = vectors @ vectors.T
    upper = np.triu_indices(len(labels), 1)
    same = (labels[:, None] == labels[None, :])[upper]
    pair_scores = scores[upper]
    genuine, impostor = np.sort(pair_scores[same]), np.sort(pair_scores[~same])
    thresholds = np.unique(np.concatenate([genuine, impostor]))
    frr = np.searchsorted(genuine, thresholds, side="left") / len(genuine)
    far = 1.0 - np.searchsorted(impostor, thresholds, side="left") / len(impostor)
    crossing = int(np.argmin(np.abs(frr - far)))
    figures: dict[str, Any] = {
        "genuine_pairs": len(genuine),
        "impostor_pairs": len(impostor),
        "eer": float((frr[crossing] + far[crossing]) / 2),
        "eer_threshold": float(thresholds[crossing]),
        "genuine_mean": float(genuine.mean()),
        "impostor_mean": float(impostor.mean()),
        "impostor_max": float(impostor[-1]),
        "d_prime": float((genuine.mean() - impostor.mean()) / np.sqrt((genuine.var() + impostor.var()) / 2)),
    }
    for name, target in (("1e-3", 1e-3), ("1e-4", 1e-4)):
        allowed = int(np.floor(target * len(impostor)))  # impostor scores allowed at or above the threshold
        threshold = float(np.nextafter(impostor[-allowed - 1], np.inf)) if allowed < len(impostor) else -1.0
        figures[f"tar_at_far_{name}"] = float((genuine >= threshold).mean())
        figures[f"threshold_at_far_{name}"] = threshold
    return figures


def genuine_failures(vectors: np.ndarray, labels: np.ndarray, figures: dict[str, Any]) -> list[tuple[int, int]]:
    """Genuine pairs (i, j) scoring below the FAR 1e-3 threshold."""
    scores = vectors @ vectors.T
    first, second = np.triu_indices(len(labels), 1)
    same = labels[first] == labels[second]
    low = scores[first, second] < figures["threshold_at_far_1e-3"]
    return [(int(i), int(j)) for i, j in zip(first[same & low], second[same & low], strict=True)]


def histogram(vectors: np.ndarray, labels: np.ndarray, thresholds: dict[str, float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = vectors @ vectors.T
    upper = np.triu_indices(len(labels), 1)
    same = (labels[:, None] == labels[None, :])[upper]
    figure, axis = plt.subplots(figsize=(8, 4.5))
    bins = [float(edge) for edge in np.linspace(-0.2, 1.0, 121)]
    axis.hist(scores[upper][~same], bins=bins, density=True, alpha=0.6, label=f"impostor ({(~same).sum():,})")
    axis.hist(scores[upper][same], bins=bins, density=True, alpha=0.6, label=f"genuine ({same.sum():,})")
    for name, value in thresholds.items():
        style = {"EER": "k", "FAR 1e-3": "tab:red", "FAR 1e-4": "tab:purple"}.get(name, "gray")
        axis.axvline(value, linestyle="--", linewidth=1, color=style, label=f"threshold at {name}: {value:.3f}")
    axis.set_yscale("log")
    axis.set_xlabel("cosine similarity")
    axis.set_ylabel("density (log)")
    axis.set_title(
        f"Tongji (PalmNet ROIs, {len(set(labels.tolist()))} palms, {len(labels)} accepted images): "
        "Gabor competitive code, all pairs"
    )
    axis.legend(loc="lower center", fontsize=8, framealpha=0.9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def encode_timings(embedders: dict[str, Any], rois: list[np.ndarray]) -> dict[str, dict[str, float]]:
    """Per-palm encoding time (one ROI per call, as at the kiosk), interleaved so load hits all alike.

    Wall time and this process's CPU time: on the shared 2-core machine other jobs inflate wall time.
    """
    wall: dict[str, list[float]] = {name: [] for name in embedders}
    cpu: dict[str, list[float]] = {name: [] for name in embedders}
    for encoder in embedders.values():
        for roi in rois[:3]:
            encoder.encode(roi[None])  # warm-up
    for roi in rois:
        for name, encoder in embedders.items():
            cpu_start, start = time.process_time(), time.perf_counter()
            encoder.encode(roi[None])
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
    results = {}
    for name in embedders:
        cpu_ms = percentiles_ms(cpu[name])
        results[name] = {**percentiles_ms(wall[name]), "cpu_p50_ms": cpu_ms["p50_ms"], "cpu_p95_ms": cpu_ms["p95_ms"]}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timing-images", type=int, default=200, help="ROIs timed per encoder (fixed sample)")
    args = parser.parse_args()
    config = load_config()
    config.runtime.threads = 1  # one thread each, so the three implementations compete on equal terms
    cv2.setNumThreads(1)
    names, labels, images = load_tongji(config.paths.eval_data_dir)

    started = time.perf_counter()
    prepared, refused = [], []
    prepare_s = []
    for name, image in zip(names, images, strict=True):
        mark = time.perf_counter()
        try:
            prepare_roi(image)
        except KioskError as exc:  # a refused ROI is a result (failure to acquire), not a crash
            refused.append({"image": name, "reason": exc.message})
        prepare_s.append(time.perf_counter() - mark)
        try:
            prepared.append(prepare_roi(image, max_background_fraction=1.0).roi)
        except KioskError as exc:
            raise SystemExit(f"Tongji ROI {name} is refused even without the background gate: {exc}") from exc
    rois = np.stack(prepared)
    refused_names = [item["image"] for item in refused]

    embedders: dict[str, PalmEmbedder] = {
        backend: load_palm_embedder(config, backend=backend) for backend in ("openvino", "onnxruntime")
    }
    params: GaborCodeParams = compcode_params()
    reference = ReferenceCompCodeEncoder(params, embedders["openvino"].model_sha256)
    vectors = {name: embedder.encode_rois(list(rois)) for name, embedder in embedders.items()}
    vectors["numpy"] = reference.encode(rois)
    agreement = {
        f"{name}_vs_numpy": {
            "min_cosine": float((vectors[name] * vectors["numpy"]).sum(axis=1).min()),
            "mean_cosine": float((vectors[name] * vectors["numpy"]).sum(axis=1).mean()),
        }
        for name in embedders
    }
    main_vectors = vectors["openvino"]

    tune = np.isin(labels, list(TUNE_PALMS))
    keep = ~np.isin(np.array(names), refused_names)
    ungated_all = verification(main_vectors, labels)
    below = genuine_failures(main_vectors, labels, ungated_all)
    involving = [pair for pair in below if names[pair[0]] in refused_names or names[pair[1]] in refused_names]
    splits = {
        "all": verification(main_vectors[keep], labels[keep]),
        "heldout_31_100": verification(main_vectors[keep & ~tune], labels[keep & ~tune]),
        "tune_1_30": verification(main_vectors[keep & tune], labels[keep & tune]),
        "all_no_capture_gate": ungated_all,
    }

    rng = np.random.default_rng(0)
    sample = rng.choice(len(rois), size=min(args.timing_images, len(rois)), replace=False)
    timing_embedders: dict[str, Any] = {name: embedder.encoder for name, embedder in embedders.items()}
    timing_embedders["numpy"] = reference
    timings = encode_timings(timing_embedders, [rois[i] for i in sample])
    prepare_timing = percentiles_ms(prepare_s)

    all_split = splits["all"]
    histogram(
        main_vectors[keep],
        labels[keep],
        {
            "EER": all_split["eer_threshold"],
            "FAR 1e-3": all_split["threshold_at_far_1e-3"],
            "FAR 1e-4": all_split["threshold_at_far_1e-4"],
        },
        Path(__file__).resolve().parent / "results" / "palm_tongji_hist.png",
    )

    figures: dict[str, Any] = {
        "tongji.eer": all_split["eer"],
        "tongji.tar_at_far_1e-3": all_split["tar_at_far_1e-3"],
        "tongji.tar_at_far_1e-4": all_split["tar_at_far_1e-4"],
        "tongji.heldout.eer": splits["heldout_31_100"]["eer"],
        "tongji.heldout.tar_at_far_1e-3": splits["heldout_31_100"]["tar_at_far_1e-3"],
        "tongji.tune.eer": splits["tune_1_30"]["eer"],
        "tongji.genuine_pairs": all_split["genuine_pairs"],
        "tongji.impostor_pairs": all_split["impostor_pairs"],
        "tongji.failure_to_acquire": len(refused),
        "tongji.failure_to_acquire.fraction": len(refused) / len(names),
        "tongji.no_capture_gate.eer": ungated_all["eer"],
        "tongji.no_capture_gate.tar_at_far_1e-3": ungated_all["tar_at_far_1e-3"],
        "encode.openvino.p50_ms": timings["openvino"]["p50_ms"],
        "encode.openvino.p95_ms": timings["openvino"]["p95_ms"],
        "encode.onnxruntime.p50_ms": timings["onnxruntime"]["p50_ms"],
        "encode.onnxruntime.p95_ms": timings["onnxruntime"]["p95_ms"],
        "encode.numpy.p50_ms": timings["numpy"]["p50_ms"],
        "encode.numpy.p95_ms": timings["numpy"]["p95_ms"],
        "encode.openvino.cpu_p50_ms": timings["openvino"]["cpu_p50_ms"],
        "encode.onnxruntime.cpu_p50_ms": timings["onnxruntime"]["cpu_p50_ms"],
        "encode.numpy.cpu_p50_ms": timings["numpy"]["cpu_p50_ms"],
        "roi_prepare.p50_ms": prepare_timing["p50_ms"],
        "graph_vs_numpy.min_cosine": min(a["min_cosine"] for a in agreement.values()),
    }
    extra = {
        "encoder": {
            "name": embedders["openvino"].name,
            "sha256": embedders["openvino"].model_sha256,
            "dimension": embedders["openvino"].dimension,
            "params": params.__dict__,
        },
        "splits": splits,
        "timings": timings,
        "roi_prepare": prepare_timing,
        "agreement": agreement,
        "published": [{"method": m, "tongji_eer": e} for m, e in PUBLISHED],
        "refused_at_capture": refused,
        "images": len(names),
        "no_capture_gate_genuine_pairs_below_far_1e-3": len(below),
        "of_which_involve_refused": len(involving),
        "seconds": time.perf_counter() - started,
        "load_average_1m_at_end": os.getloadavg()[0],
    }
    write_results("palm", figures, markdown(splits, timings, prepare_timing, agreement, extra), extra)


def markdown(
    splits: dict[str, dict[str, Any]],
    timings: dict[str, dict[str, float]],
    prepare_timing: dict[str, float],
    agreement: dict[str, dict[str, float]],
    extra: dict[str, Any],
) -> str:
    pct = lambda value: f"{100 * value:.3f} %"  # noqa: E731
    rows = [
        [
            split,
            s["genuine_pairs"],
            s["impostor_pairs"],
            pct(s["eer"]),
            pct(s["tar_at_far_1e-3"]),
            pct(s["tar_at_far_1e-4"]),
            f"{s['d_prime']:.2f}",
            f"{s['eer_threshold']:.3f}",
        ]
        for split, s in splits.items()
    ]
    accuracy = table(["pairs", "genuine", "impostor", "EER", "TAR@FAR1e-3", "TAR@FAR1e-4", "d'", "EER thr"], rows)
    published = table(
        ["method", "Tongji EER"],
        [[m, pct(e)] for m, e in PUBLISHED]
        + [
            ["this encoder, accepted ROIs (above)", pct(splits["all"]["eer"])],
            ["this encoder, every ROI, no capture gate", pct(splits["all_no_capture_gate"]["eer"])],
        ],
    )
    base, base_cpu = timings["numpy"]["p50_ms"], timings["numpy"]["cpu_p50_ms"]
    speed = table(
        [
            "implementation",
            "wall p50 ms",
            "wall p95 ms",
            "CPU p50 ms",
            "CPU p95 ms",
            "vs numpy (wall p50)",
            "vs numpy (CPU p50)",
        ],
        [
            [
                name,
                f"{t['p50_ms']:.2f}",
                f"{t['p95_ms']:.2f}",
                f"{t['cpu_p50_ms']:.2f}",
                f"{t['cpu_p95_ms']:.2f}",
                f"{base / t['p50_ms']:.2f}x",
                f"{base_cpu / t['cpu_p50_ms']:.2f}x",
            ]
            for name, t in timings.items()
        ],
    )
    agree = table(
        ["graph", "min cosine vs numpy", "mean cosine"],
        [[name, f"{a['min_cosine']:.6f}", f"{a['mean_cosine']:.6f}"] for name, a in agreement.items()],
    )
    p, encoder = extra["encoder"]["params"], extra["encoder"]
    involving, below = extra["of_which_involve_refused"], extra["no_capture_gate_genuine_pairs_below_far_1e-3"]
    refused = "; ".join(f"{item['image']} ({item['reason']})" for item in extra["refused_at_capture"]) or "none"
    bank = f"{p['orientations']} even Gabor filters ({p['kernel_size']} px, omega {p['omega']}, {p['octaves']} octaves)"
    code = f"soft competitive code (softmax over orientations, beta {p['beta']})"
    pooling = f"orientation histograms in {p['block']} px blocks at stride {p['stride']}"
    prepare = f"p50 {prepare_timing['p50_ms']:.2f} ms, p95 {prepare_timing['p95_ms']:.2f} ms"
    return f"""Encoder: `{encoder["name"]}` (sha256 `{encoder["sha256"][:16]}…`, {encoder["dimension"]}-d):
{bank} on the CLAHE-normalised 128x128 ROI, {code}, {pooling}, mean-centred and L2-normalised;
cosine similarity. No training.

## Verification (Tongji, PalmNet ROI subset, all pairs)

{accuracy}

The rows above `all_no_capture_gate` hold the ROIs the terminal's capture gates accept (kiosk.identity.palm_roi;
the same gates `kiosk calibrate` and `kiosk eval locomo` apply). Refused at capture, {len(extra["refused_at_capture"])}
of {extra["images"]} (failures to acquire: the kiosk asks for another scan): {refused}. Without the gates,
{involving} of the {below} genuine pairs below the FAR 1e-3 threshold involve them. The background gate
(palm_roi.MAX_BACKGROUND_FRACTION 0.10) was added after these three crops had been found by inspecting the worst
genuine pairs; every other ROI has at most 4 % near-black pixels, so any limit from 5 % to 21 % refuses the same
three.

![genuine/impostor histogram](palm_tongji_hist.png)

## Against published classical coders

{published}

The published figures are not directly comparable: they use the full Tongji contactless set (600 palms,
12,000 images, two sessions) with ROIs from the authors' own extraction and the coders' native Hamming
matching with pixel shifts, in a closed-set protocol. Here: a 100-palm / 907-image subset with PalmNet's ROIs
(three visibly mis-cropped), every within-subset pair (no session split), a fixed-length vector compared by
one cosine (no shift search), and parameters chosen on palms 1-30 (held-out 31-100 reported separately).

## Encoding time per palm (one 128x128 ROI per call, one thread each, interleaved, same run)

{speed}

Wall time is what a user waits; CPU time is this process's own compute. The machine is shared by several
jobs (load average well above its 2 cores during this run), so wall time is inflated and noisy; CPU time
shows the implementations' own cost.

ROI preparation (gray, resize 150->128, gates, CLAHE): {prepare}.
OpenVINO runs the graph in f32 (its bf16 default moved cosines to 0.9996).

## ONNX graph vs numpy/OpenCV reference (all 907 ROIs)

{agree}

## How the parameters were chosen

On palms 1-30 only (273 images, 1,147 genuine / 35,981 impostor pairs): orientations 6/8/12/16, omega
0.25-1.3, kernel 17-45 px, beta 1-1000 (soft to hard code), block 8-40 px, stride 4-16 px, CLAHE on/off,
BOCV-style per-orientation sign features (worse), two-scale and two-block-size pyramids (no gain). EER on the
tuning palms saturated at 0.78 % during tuning (the errors came from one mis-cropped ROI, 0027_0002), so d'
broke ties.
Total run {extra["seconds"]:.0f} s; 1-minute load average at the end {extra["load_average_1m_at_end"]:.1f} (2 cores)."""


if __name__ == "__main__":
    main()
