"""Face identity benchmark: LFW verification (10 folds) and per-stage latency, FaceNet vs dlib in one run.

.venv/bin/python -m bench.bench_face [--sweep-folds 1] [--margins 0,0.27,0.36,0.44,0.53] [--cache DIR] [--skip-dlib]

LFW: LFW3D frontalized 90x90 tight crops + the official pairs.txt (6,000 pairs, 10 folds). The crops
go through `embed_crop` (no detection: a reflected margin, resize to 160, fixed standardisation).
The margin sweep runs on the first `--sweep-folds` folds; the configured margin is then scored on all
10 folds (threshold chosen on 9 folds, tested on the 10th). Latency: every frame of the face video
through detect / quality / align / embed, and the same frames through face_recognition (dlib).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench.common import table, write_results
from bench.face_latency import dlib_latency, pipeline_latency, video_frames
from bench.lfw_verification import (
    FAR_TARGET,
    best_threshold,
    cosine_scores,
    dlib_lfw_scores,
    equal_error_rate,
    facenet_embeddings,
    histogram,
    read_pairs,
    verification_figures,
)
from kiosk.config import KioskConfig, load_config
from kiosk.identity.align import PRECROPPED_MARGIN, PRECROPPED_MARGIN_X
from kiosk.identity.face import FLIP_AUGMENT, FaceEmbedder, FacePipeline, load_face_embedder
from kiosk.identity.quality import assess

RESULTS = Path(__file__).resolve().parent / "results"
# dlib cuts its own 150x150 chip around its landmarks with 25 % padding: give it reflected context.
DLIB_CONTEXT_MARGIN = 0.5


def run_lfw(config: KioskConfig, embedder: FaceEmbedder, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    lfw = config.paths.eval_data_dir / "lfw3d_frontalized"
    images = lfw / "images"
    pairs = read_pairs(lfw)
    figures: dict[str, Any] = {}
    lines: list[str] = []

    sweep_pairs = [p for p in pairs if p.fold < args.sweep_folds]
    sweep_names = sorted({n for p in sweep_pairs for n in (p.first, p.second)})
    sweep_rows = []
    timer = time.perf_counter()
    for margin, margin_x, mode in args.margins:
        plain, flip = facenet_embeddings(embedder, images, sweep_names, margin, args.cache, margin_x, mode)
        summed = {n: plain[n] + flip[n] for n in sweep_names}
        same = np.array([p.same for p in sweep_pairs])
        for label, vectors in (("plain", plain), ("flip-sum", summed)):
            scores = cosine_scores(sweep_pairs, vectors)
            # Accuracy at the best threshold of these folds (optimistic; used only to rank variants).
            accuracy = float(np.mean((scores >= best_threshold(scores, same)) == same))
            eer = equal_error_rate(scores, same)[0]
            shape = f"{margin:.2f}" if margin_x is None else f"{margin:.2f}x{margin_x:.2f}"
            shape += "" if mode == "reflect" else f" {mode}"
            key = f"lfw_sweep.margin_{shape.replace(' ', '_')}.{label}"
            figures[f"{key}.accuracy_best_threshold"] = accuracy
            figures[f"{key}.eer"] = eer
            pixels = f"{margin * 45:.0f}"
            if margin_x is not None:
                pixels += f" top/bottom, {margin_x * 45:.0f} sides"
            sweep_rows.append([f"{shape} ({pixels} px per edge)", label, accuracy, eer])
    print(f"sweep done in {time.perf_counter() - timer:.0f} s", flush=True)
    lines += [
        f"### Margin sweep on the first {args.sweep_folds} fold(s) ({len(sweep_pairs)} pairs; accuracy at these "
        "pairs' own best threshold, used only to rank variants)\n",
        table(["margin height x width (fraction of side)", "embedding", "accuracy", "EER"], sweep_rows),
        "",
    ]

    margin, margin_x = PRECROPPED_MARGIN, PRECROPPED_MARGIN_X
    shape = f"{margin:.2f}" if margin_x is None else f"{margin:.2f}x{margin_x:.2f}"
    names = sorted({n for p in pairs for n in (p.first, p.second)})
    timer = time.perf_counter()
    plain, flip = facenet_embeddings(embedder, images, names, margin, args.cache, margin_x)
    embed_s = time.perf_counter() - timer
    results_rows = []
    scores_by_variant = {}
    for label, vectors in (("plain", plain), ("flip-sum", {n: plain[n] + flip[n] for n in names})):
        scores = cosine_scores(pairs, vectors)
        scores_by_variant[label] = scores
        stats = verification_figures(scores, pairs)
        for name, value in stats.items():
            figures[f"lfw.facenet.margin_{shape}.{label}.{name}"] = value
        results_rows.append(
            [
                f"FaceNet IR, margin {shape}, {label}",
                f"{stats['accuracy']:.4f} ± {stats['accuracy_std']:.4f}",
                stats["eer"],
                stats["tar_at_far_1e-3"],
            ]
        )
    chosen = "flip-sum" if FLIP_AUGMENT else "plain"
    for name, value in verification_figures(scores_by_variant[chosen], pairs).items():
        figures[f"lfw.{name}"] = value
    figures["lfw.configuration"] = f"facenet margin {shape} {chosen}"
    eer_threshold = figures["lfw.eer_threshold"]
    histogram(
        RESULTS / "face_lfw_hist.png",
        scores_by_variant[chosen],
        pairs,
        eer_threshold,
        f"LFW3D 6,000 pairs: FaceNet IR ({chosen}, margin {shape})",
    )
    print(f"facenet LFW: {len(names)} images in {embed_s:.0f} s", flush=True)

    lines += [
        f"### LFW3D, all 10 folds ({len(pairs)} pairs, {len(names)} images)\n",
        "Accuracy: threshold chosen on 9 folds, tested on the 10th, mean ± std over the 10 folds. "
        f"TAR at FAR = 1e-3 allows {int(FAR_TARGET * 3000)} of 3,000 impostor pairs above the threshold, "
        "so it rests on very few pairs.\n",
        table(["model", "accuracy", "EER", "TAR@FAR=1e-3"], results_rows),
        "",
        "Histogram: `bench/results/face_lfw_hist.png`.",
        "",
    ]
    if not args.skip_dlib:
        # dlib-bin has no BLAS: ~1 s per face here, so the peer runs on a stratified subset of the pairs
        # (the first N genuine and N impostor pairs of every fold), with FaceNet scored on the same pairs.
        per_fold = len(pairs) // 10
        subset_index = [i for i in range(len(pairs)) if (i % per_fold) % (per_fold // 2) < args.dlib_pairs]
        subset = [pairs[i] for i in subset_index]
        timer = time.perf_counter()
        dlib_scores = dlib_lfw_scores(images, subset, DLIB_CONTEXT_MARGIN, args.cache)
        dlib_s = time.perf_counter() - timer
        rows = []
        for label, scores in (
            ("face_recognition / dlib ResNet", dlib_scores),
            (f"FaceNet IR ({chosen})", scores_by_variant[chosen][subset_index]),
        ):
            stats = verification_figures(scores, subset)
            prefix = "lfw_subset.dlib" if label.startswith("face_rec") else "lfw_subset.facenet"
            for name, value in stats.items():
                figures[f"{prefix}.{name}"] = value
            rows.append([label, f"{stats['accuracy']:.4f} ± {stats['accuracy_std']:.4f}", stats["eer"]])
        print(f"dlib LFW subset in {dlib_s:.0f} s", flush=True)
        lines += [
            f"### Peer on the same crops: {len(subset)} pairs ({args.dlib_pairs} genuine + {args.dlib_pairs} "
            "impostor from each fold, 10-fold protocol)\n",
            "face_recognition 1.3.0 on dlib-bin 20.0.1 (dlib ResNet-34, 128-d, its 5-point 150x150 chip) given the "
            "same reflected-margin image and the original crop as the face location; score = -euclidean distance. "
            "dlib-bin is built without BLAS (DLIB_USE_BLAS False), hence the subset.\n",
            table(["model", "accuracy", "EER"], rows),
            "",
        ]
    return figures, "\n".join(lines)


def run_latency(config: KioskConfig, embedder: FaceEmbedder, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    all_frames = video_frames(config.paths.eval_data_dir / "face_video" / "short_hamilton_clip.mp4", args.frames)
    frames = all_frames[:: args.frame_step]
    figures: dict[str, Any] = {}
    rows = []
    reports: dict[str, dict[str, Any]] = {}
    for detector in ("mediapipe", "mtcnn"):
        variant = config.model_copy(deep=True)
        variant.face.detector = detector
        pipeline = FacePipeline(variant, embedder=embedder.pipeline.embedder)
        reports[f"facenet+{detector}"] = pipeline_latency(pipeline, frames)
    if not args.skip_dlib:
        reports["dlib"] = dlib_latency(frames)
    for name, report in reports.items():
        for key, value in report.items():
            if isinstance(value, dict):
                figures[f"video.{name}.{key}.p50_ms"] = value["p50_ms"]
                figures[f"video.{name}.{key}.p95_ms"] = value["p95_ms"]
                rows.append([name, key, value["n"], value["p50_ms"], value["p95_ms"]])
            else:
                figures[f"video.{name}.{key}"] = value
    if "dlib" in reports and "probe" in reports["dlib"]:
        ours = reports["facenet+mediapipe"]["probe"]["p50_ms"]
        figures["video.probe_p50.dlib_over_facenet_mediapipe"] = reports["dlib"]["probe"]["p50_ms"] / ours
    counts = [[name, r["frames"], r["faces"], r.get("frames_with_requester", "-")] for name, r in reports.items()]
    flip = "with" if FLIP_AUGMENT else "without"
    text = "\n".join(
        [
            f"### Latency on {len(frames)} frames (every n-th, n = {args.frame_step}) of short_hamilton_clip.mp4 "
            "(640x360), "
            "the same frames for every pipeline\n",
            f"FaceNet embed is {flip} the flip (two inferences when on). `probe` = one frame from array to "
            "requester embedding (detect + quality + align + embed); stages only count frames where they ran. "
            "Absolute times depend on the load of the shared 2-core machine; compare pipelines within the run.\n",
            table(["pipeline", "stage", "n", "p50 ms", "p95 ms"], rows),
            "",
            table(["pipeline", "frames", "faces detected", "frames with a gated requester"], counts),
            "",
        ]
    )
    return figures, text


def loop_fps(config: KioskConfig, embedder: FaceEmbedder, seconds: float) -> tuple[dict[str, Any], str]:
    """Decode + detect as fast as possible on one thread while another thread keeps embedding."""
    import threading

    pipeline = embedder.pipeline
    video = config.paths.eval_data_dir / "face_video" / "short_hamilton_clip.mp4"
    latest: list[np.ndarray] = []
    stop = threading.Event()
    embedded = 0

    def embed_worker() -> None:
        nonlocal embedded
        while not stop.is_set():
            if latest:
                pipeline.embed_aligned([latest[-1]])
                embedded += 1
            else:
                time.sleep(0.005)

    worker = threading.Thread(target=embed_worker, daemon=True)
    worker.start()
    capture = cv2.VideoCapture(str(video))
    frames = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        ok, frame = capture.read()
        if not ok:
            capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
            continue
        faces = pipeline.detect(frame)
        if faces:
            latest[:] = [pipeline.align(frame, faces[0])]
        frames += 1
    elapsed = time.perf_counter() - start
    stop.set()
    worker.join()
    capture.release()
    figures = {"video.loop.capture_detect_fps": frames / elapsed, "video.loop.embeddings_per_s": embedded / elapsed}
    text = (
        f"### Capture + detection loop while embedding runs ({seconds:.0f} s, {config.face.detector})\n\n"
        f"Decode + detect on one thread: **{frames / elapsed:.1f} frames/s**; meanwhile a second thread embedded the "
        f"newest face {embedded / elapsed:.1f} times/s (flip {'on' if FLIP_AUGMENT else 'off'}).\n"
    )
    return figures, text


def quality_examples(config: KioskConfig, embedder: FaceEmbedder) -> str:
    frames = video_frames(config.paths.eval_data_dir / "face_video" / "short_hamilton_clip.mp4", 400)
    rows = []
    for index in range(0, len(frames), 30):
        for face in embedder.pipeline.detect(frames[index]):
            verdict = assess(frames[index], face, config.face.min_face_px)
            rows.append(
                [
                    index,
                    round(verdict.size_px),
                    round(verdict.sharpness),
                    round(verdict.turn, 2),
                    round(verdict.brightness),
                    ", ".join(verdict.reasons) or "pass",
                ]
            )
    return "### Quality gates on every 30th video frame\n\n" + table(
        ["frame", "size px", "sharpness", "turn", "brightness", "verdict"], rows
    )


def notes(config: KioskConfig, figures: dict[str, Any]) -> str:
    accuracy = figures.get("lfw.accuracy")
    measured = f"{accuracy:.3f}" if isinstance(accuracy, float) else "n/a"
    margin_x = PRECROPPED_MARGIN_X
    horizontal = "the same fraction" if margin_x is None else f"{margin_x:.2f} of the width"
    return f"""### How the pipeline treats pre-cropped input

`FaceEmbedder.embed_crop(image)` (the path used here and by calibration) runs no detector: a tight crop
gets the margin FaceNet was trained with by reflecting its borders ({PRECROPPED_MARGIN:.2f} of
the height added in total top+bottom, {horizontal} left+right), is resized to 160x160 (aspect not kept, as
in FaceNet's own MTCNN-box crops), standardised with (x - 127.5) / 128, embedded, and with
`FLIP_AUGMENT` (kiosk/identity/face.py) the embedding of the mirror image is added before L2 normalisation.
`embed_image(frame)` is the live path instead: detector -> five landmarks -> an MTCNN-like box rebuilt
from the landmarks plus `CROP_MARGIN` (kiosk/identity/facenet.py) eye-to-mouth distances -> the same model.

### What reaching the published 99 % would take (measured here: {measured})

- Better crops: the published 99.6 % for 20180408-102900 is on the original 250x250 LFW photos aligned
  with MTCNN and a 32 px margin (real forehead, hair, chin, ears). LFW3D crops are 90 px (upsampled x1.8),
  synthetically frontalised (the hidden half is hallucinated and darker) and cut tight, so the margin
  here is invented by reflection. Running `embed_image` on the original LFW images is the fix; they
  are not in ../shared/data.
- A stronger model: an ArcFace ResNet-100 (insightface, 99.8 % on LFW) through the
  `face.embedder = "arcface-onnx"` path, which takes any 112x112 ArcFace-style ONNX a deployer supplies.
- Fusion: flip test-time augmentation is measured above; at the kiosk the probe also fuses the last
  frames (verify.py) and enrollment keeps several templates, which LFW's single-image pairs cannot show.
"""


def parse_margins(text: str) -> list[tuple[float, float | None, str]]:
    """ "0.36" (both axes), "0.36:0.1" (height:width) or "0.36:0.1:replicate" (border mode)."""
    margins: list[tuple[float, float | None, str]] = []
    for item in text.split(","):
        parts = item.split(":")
        horizontal = float(parts[1]) if len(parts) > 1 and parts[1] not in ("", "-") else None
        margins.append((float(parts[0]), horizontal, parts[2] if len(parts) > 2 else "reflect"))
    return margins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep-folds", type=int, default=1, help="folds used to compare margins")
    parser.add_argument(
        "--margins",
        type=parse_margins,
        default=parse_margins("0,0.27,0.36,0.44,0.53"),
        help="reflected margins (fraction of the crop height[:width]), comma-separated",
    )
    parser.add_argument("--frames", type=int, default=275, help="video frames for latency")
    parser.add_argument("--cache", type=Path, default=None, help="directory caching LFW embeddings (not the repo)")
    parser.add_argument("--skip-dlib", action="store_true", help="leave out the face_recognition/dlib peer")
    parser.add_argument("--skip-lfw", action="store_true", help="latency only")
    parser.add_argument("--dlib-pairs", type=int, default=30, help="genuine and impostor pairs per fold for dlib")
    parser.add_argument("--frame-step", type=int, default=3, help="use every n-th video frame for latency")
    parser.add_argument("--loop-seconds", type=float, default=15.0, help="duration of the capture+detect loop run")
    args = parser.parse_args()
    config = load_config()
    embedder = load_face_embedder(config)
    figures: dict[str, Any] = {}
    sections = []
    if not args.skip_lfw:
        lfw_figures, lfw_text = run_lfw(config, embedder, args)
        figures.update(lfw_figures)
        sections.append(lfw_text)
    latency_figures, latency_text = run_latency(config, embedder, args)
    figures.update(latency_figures)
    sections.append(latency_text)
    fps_figures, fps_text = loop_fps(config, embedder, args.loop_seconds)
    figures.update(fps_figures)
    sections.append(fps_text)
    sections.append(quality_examples(config, embedder))
    sections.append(notes(config, figures))
    body = "\n".join(sections)
    write_results("face", figures, body, extra={"settings": config.face.model_dump(mode="json")})
    print(body)


if __name__ == "__main__":
    main()
