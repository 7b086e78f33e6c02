"""Face embedding models side by side: LFW3D verification and the per-frame probe cost, in one run.

Each model embeds the images of the 6,000 LFW pairs exactly as calibration and `kiosk eval locomo` do
(the pre-cropped path, flip augmentation as configured; the calibration embedding cache is shared),
and probes the same video frames (detect, quality, align, embed), the models interleaved frame by frame.

    .venv/bin/python -m bench.bench_face_models [--embedders facenet,sface,facenet+sface]
"""

from __future__ import annotations

import argparse
from typing import Any, cast

import numpy as np

from bench.common import percentiles_ms, table, write_results
from bench.face_latency import video_frames
from bench.lfw_verification import read_pairs, verification_figures
from kiosk.calibration.embed import Embedder, embed_paths, embedding_cache
from kiosk.config import KioskConfig, load_config
from kiosk.identity.face import FLIP_AUGMENT, FaceEmbedder, load_face_embedder

VIDEO = "face_video/short_hamilton_clip.mp4"


def with_embedder(config: KioskConfig, name: str) -> KioskConfig:
    return config.model_copy(update={"face": config.face.model_copy(update={"embedder": name})})


def lfw_scores(config: KioskConfig, embedder: FaceEmbedder) -> tuple[np.ndarray, list[Any], int]:
    lfw = config.paths.eval_data_dir / "lfw3d_frontalized"
    pairs = read_pairs(lfw)
    names = sorted({n for p in pairs for n in (p.first, p.second)})
    paths = [lfw / "images" / n for n in names]
    as_calibration = cast(Embedder, embedder)  # the embedder calibration uses, so its cache is shared
    embedded = embed_paths(as_calibration, paths, cache=embedding_cache(config, as_calibration, lfw))
    if not embedded.valid.all():
        raise SystemExit(f"{embedder.name}: unreadable LFW images {embedded.unreadable[:3]}")
    index = {name: i for i, name in enumerate(names)}
    first = embedded.vectors[[index[p.first] for p in pairs]]
    second = embedded.vectors[[index[p.second] for p in pairs]]
    return np.einsum("ij,ij->i", first, second), pairs, embedded.cached


def probe_latency(embedders: dict[str, FaceEmbedder], frames: list[np.ndarray]) -> dict[str, dict[str, Any]]:
    samples: dict[str, dict[str, list[float]]] = {name: {"embed": [], "probe": []} for name in embedders}
    for embedder in embedders.values():
        embedder.analyse(frames[0])  # first inference allocates
    for frame in frames:
        for name, embedder in embedders.items():
            analysis = embedder.analyse(frame)
            if analysis.embedding is not None:
                samples[name]["embed"].append(analysis.timings_ms["embed"] / 1000)
                samples[name]["probe"].append(analysis.timings_ms["total"] / 1000)
    return {name: {stage: percentiles_ms(s) for stage, s in stages.items() if s} for name, stages in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="facenet,sface,facenet+sface", help="face.embedder values")
    parser.add_argument("--frames", type=int, default=275, help="video frames read")
    parser.add_argument("--frame-step", type=int, default=3, help="use every n-th frame")
    parser.add_argument("--name", default="face_models")
    args = parser.parse_args()
    config = load_config()
    names = args.embedders.split(",")
    embedders = {name: load_face_embedder(with_embedder(config, name)) for name in names}

    figures: dict[str, Any] = {}
    lfw_rows = []
    for name, embedder in embedders.items():
        scores, pairs, cached = lfw_scores(with_embedder(config, name), embedder)
        stats = verification_figures(scores, pairs)
        for key, value in stats.items():
            figures[f"lfw3d.{name}.{key}"] = value
        lfw_rows.append(
            [
                f"{name} ({embedder.dimension}-d)",
                f"{stats['accuracy']:.4f} ± {stats['accuracy_std']:.4f}",
                f"{stats['eer']:.4f}",
                f"{stats['tar_at_far_1e-3']:.3f}",
                cached,
            ]
        )
        print(f"{name}: LFW3D accuracy {stats['accuracy']:.4f}, EER {stats['eer']:.4f}", flush=True)

    frames = video_frames(config.paths.eval_data_dir / VIDEO, args.frames)[:: args.frame_step]
    latency = probe_latency(embedders, frames)
    latency_rows = []
    base = names[0]
    for name in names:
        for stage in ("embed", "probe"):
            if stage in latency[name]:
                for key, value in latency[name][stage].items():
                    figures[f"video.{name}.{stage}.{key}"] = value
        if "probe" in latency[name] and "probe" in latency[base]:
            ratio = latency[name]["probe"]["p50_ms"] / latency[base]["probe"]["p50_ms"]
            figures[f"video.{name}.probe.p50_over_{base}"] = ratio
        latency_rows.append(
            [
                name,
                latency[name].get("embed", {}).get("n", 0),
                f"{latency[name].get('embed', {}).get('p50_ms', float('nan')):.1f}",
                f"{latency[name].get('probe', {}).get('p50_ms', float('nan')):.1f}",
                f"{latency[name].get('probe', {}).get('p95_ms', float('nan')):.1f}",
                f"{figures.get(f'video.{name}.probe.p50_over_{base}', float('nan')):.2f}",
            ]
        )

    flip = "with" if FLIP_AUGMENT else "without"
    body = "\n".join(
        [
            "### LFW3D, all 10 folds (6,000 pairs; 3,000 genuine / 3,000 impostor)",
            "",
            f"The pre-cropped path calibration and `kiosk eval locomo` use, {flip} flip augmentation. Accuracy: "
            "threshold chosen on 9 folds, tested on the 10th, mean ± std over the folds. TAR at FAR = 1e-3 allows "
            "3 of the 3,000 impostor pairs above the threshold. EER and TAR on all 6,000 pairs.",
            "",
            table(["model", "accuracy", "EER", "TAR@FAR=1e-3", "images from the embedding cache"], lfw_rows),
            "",
            f"### Probe cost on {len(frames)} frames of `{VIDEO}` (every {args.frame_step}. frame, 640x360)",
            "",
            "One probe = detect + quality + align + embed of the requester's face, the models taking turns on each "
            "frame. Milliseconds on the shared 2-core machine: compare within the run.",
            "",
            table(
                ["model", "frames embedded", "embed p50 ms", "probe p50 ms", "probe p95 ms", f"probe p50 / {base}"],
                latency_rows,
            ),
        ]
    )
    write_results(args.name, figures, body, extra={"settings": config.face.model_dump(mode="json")})
    print(body)


if __name__ == "__main__":
    main()
