"""Capture + detection loop on the face video: frames per second sustained, detection only vs detection + embedding.

.venv/bin/python -m bench.bench_capture [--passes 1] [--detectors mediapipe,mtcnn]

The video file source replays ../shared/data/face_video/short_hamilton_clip.mp4 (640x360, 29.97 fps) on its own
thread, looped. A ContinuousVerifier analyses the newest frame on a worker thread, exactly as the kiosk does
(FacePipeline.analyse, then the probe fuser). Two source speeds, both paced like a camera:
  1x - the file's own 29.97 fps: the loop can at most keep up (30 fps);
  4x - 120 fps: the loop's own ceiling, without a decoder thread running flat out and taking a core from it.
Each window lasts whole passes through the clip (9.2 s per pass at 1x), so every part of it counts equally.
For each detector, "detect" runs detection + quality gates only (analyse(embed=False)); "detect+embed" also
aligns and embeds the requester (FaceNet, with flip augmentation when configured) on every frame where a face
passes the gates. Loop fps = frames analysed per second; capture fps = frames the source delivered per second
in the same window (frames the loop did not get to are dropped, never queued).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles_ms, table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.identity.face import FacePipeline
from kiosk.identity.sources import SourceState, VideoFileSource
from kiosk.identity.verify import ContinuousVerifier, ProbeFuser


def decode_rate(video: Path, seconds: float) -> float:
    """Frames per second the source thread delivers with no consumer and no pacing."""
    source = VideoFileSource(video, loop=True, realtime=False).start()
    while source.latest() is None and source.state != SourceState.FAILED:
        time.sleep(0.01)
    start_frames, started = source.status().frames, time.perf_counter()
    time.sleep(seconds)
    rate = (source.status().frames - start_frames) / (time.perf_counter() - started)
    source.stop()
    return rate


def run_loop(
    video: Path, analyse: Callable[[np.ndarray], Any], sha: str, speed: float, seconds: float
) -> dict[str, Any]:
    durations: list[float] = []
    with_face: list[bool] = []
    recording = [False]

    cpu_per_call: list[float] = []

    def timed(image: np.ndarray) -> Any:
        started, cpu_started = time.perf_counter(), time.process_time()
        analysis = analyse(image)
        if recording[0]:
            durations.append(time.perf_counter() - started)
            cpu_per_call.append(time.process_time() - cpu_started)
            with_face.append(analysis.requester_index is not None)
        return analysis

    source = VideoFileSource(video, loop=True, realtime=True, speed=speed).start()
    verifier = ContinuousVerifier(source, timed, ProbeFuser("face", sha)).start()
    while verifier.analysed < 3:  # warm-up: model caches, first frames
        time.sleep(0.01)
    probe_times: list[float] = []
    probes_ok = 0
    recording[0] = True
    analysed0, frames0, started = verifier.analysed, source.status().frames, time.perf_counter()
    cpu0 = time.process_time()
    while time.perf_counter() - started < seconds:
        mark = time.perf_counter()
        probes_ok += verifier.probe().ok
        probe_times.append(time.perf_counter() - mark)
        time.sleep(0.1)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    analysed, delivered = verifier.analysed - analysed0, source.status().frames - frames0
    recording[0] = False
    verifier.stop()
    source.stop()
    face_durations = [d for d, face in zip(durations, with_face, strict=False) if face]
    face_cpu = [c for c, face in zip(cpu_per_call, with_face, strict=False) if face]
    return {
        "loop_fps": analysed / elapsed,
        "capture_fps": delivered / elapsed,
        "dropped_fraction": max(0.0, 1.0 - analysed / delivered) if delivered else 0.0,
        "analyse": percentiles_ms(durations),
        "analyse_with_face": percentiles_ms(face_durations) if face_durations else None,
        # while someone is in view every frame costs detection (+ embedding): the rate the kiosk re-verifies at
        "loop_fps_with_face": min(delivered / elapsed, len(face_durations) / sum(face_durations))
        if face_durations
        else 0.0,
        "face_fraction": float(np.mean(with_face)) if with_face else 0.0,
        "probe_available_fraction": probes_ok / max(1, len(probe_times)),
        # CPU seconds of the whole process (all threads: decode, detection, inference pools) per analysed frame:
        # less sensitive than wall-clock fps to other processes competing for the cores
        "cpu_ms_per_frame": 1000.0 * cpu / max(1, analysed),
        "cpu_cores_busy": cpu / elapsed,
        # process CPU time (all threads) spent during one analyse call on a frame with a face: the work a
        # frame with someone in view costs, whatever else is running on the box
        "cpu_ms_with_face_p50": 1000.0 * float(np.median(face_cpu)) if face_cpu else float("nan"),
        "probe_fuse": percentiles_ms(probe_times),
        "seconds": elapsed,
    }


def clip_seconds(video: Path) -> float:
    import cv2

    capture = cv2.VideoCapture(str(video))
    frames, fps = capture.get(cv2.CAP_PROP_FRAME_COUNT), capture.get(cv2.CAP_PROP_FPS)
    capture.release()
    return float(frames / fps) if fps > 0 else 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--passes", type=int, default=1, help="passes through the clip (at 1x) per configuration")
    parser.add_argument("--detectors", default="mediapipe,mtcnn", help="comma-separated face.detector values")
    args = parser.parse_args()

    base: KioskConfig = load_config()
    video = base.paths.eval_data_dir / "face_video" / "short_hamilton_clip.mp4"
    if not video.is_file():
        raise SystemExit(f"face video not found at {video} (set KIOSK_DATA to ../shared/data)")
    seconds = clip_seconds(video) * args.passes
    load_before = os.getloadavg()
    decode = decode_rate(video, 3.0)
    figures: dict[str, Any] = {"face_video.capture.unpaced_decode_fps": decode}
    rows: list[list[Any]] = [["-", "capture only, unpaced", "-", "-", "-", f"{decode:.0f}"] + ["-"] * 7]
    for detector in [d.strip() for d in args.detectors.split(",") if d.strip()]:
        config = base.model_copy(deep=True)
        config.face.detector = detector
        pipeline = FacePipeline(config)
        sha = pipeline.embedder.model_sha256
        modes: dict[str, Callable[[np.ndarray], Any]] = {
            "detect": partial(pipeline.analyse, embed=False),
            "detect+embed": pipeline.analyse,
        }
        for speed in (1.0, 4.0):
            pace = f"{speed:.0f}x"
            for mode, analyse in modes.items():
                result = run_loop(video, analyse, sha, speed, seconds)
                key = f"face_video.{detector}.{mode}.{pace}"
                with_face = result["analyse_with_face"] or {"p50_ms": float("nan"), "p95_ms": float("nan")}
                figures.update(
                    {
                        f"{key}.loop_fps": result["loop_fps"],
                        f"{key}.capture_fps": result["capture_fps"],
                        f"{key}.dropped_fraction": result["dropped_fraction"],
                        f"{key}.analyse_p50_ms": result["analyse"]["p50_ms"],
                        f"{key}.analyse_p95_ms": result["analyse"]["p95_ms"],
                        f"{key}.loop_fps_with_face": result["loop_fps_with_face"],
                        f"{key}.analyse_with_face_p50_ms": with_face["p50_ms"],
                        f"{key}.analyse_with_face_p95_ms": with_face["p95_ms"],
                        f"{key}.face_fraction": result["face_fraction"],
                        f"{key}.probe_available_fraction": result["probe_available_fraction"],
                        f"{key}.probe_fuse_p50_ms": result["probe_fuse"]["p50_ms"],
                        f"{key}.cpu_ms_per_frame": result["cpu_ms_per_frame"],
                        f"{key}.cpu_cores_busy": result["cpu_cores_busy"],
                        f"{key}.cpu_ms_with_face_p50": result["cpu_ms_with_face_p50"],
                    }
                )
                rows.append(
                    [
                        detector,
                        mode,
                        pace,
                        f"{result['loop_fps']:.1f}",
                        f"{result['loop_fps_with_face']:.1f}",
                        f"{result['capture_fps']:.1f}",
                        f"{result['analyse']['p50_ms']:.1f} / {result['analyse']['p95_ms']:.1f}",
                        f"{with_face['p50_ms']:.1f} / {with_face['p95_ms']:.1f}",
                        f"{result['face_fraction']:.2f}",
                        f"{result['cpu_ms_per_frame']:.1f}",
                        f"{result['cpu_ms_with_face_p50']:.1f}",
                        f"{result['cpu_cores_busy']:.2f}",
                        f"{result['probe_available_fraction']:.2f}",
                    ]
                )
                print(key, {k: v for k, v in result.items() if k != "probe_fuse"}, flush=True)
        for pace in ("1x", "4x"):
            detect = figures[f"face_video.{detector}.detect.{pace}.loop_fps"]
            full = figures[f"face_video.{detector}.detect+embed.{pace}.loop_fps"]
            figures[f"face_video.{detector}.{pace}.embed_over_detect_fps_ratio"] = full / detect if detect else 0.0
    load_after = os.getloadavg()
    ratios = ", ".join(
        f"{k.split('.')[1]} {k.split('.')[2]}: {v:.2f}"
        for k, v in figures.items()
        if k.endswith("embed_over_detect_fps_ratio")
    )
    body = "\n".join(
        [
            "Frames per second sustained by the capture + analysis loop on the face video "
            "(640x360, 29.97 fps, 275 frames, looped; each window is "
            f"{seconds:.1f} s = {args.passes} pass(es) at 1x). Loop fps = frames analysed per second by the "
            "ContinuousVerifier worker over the whole clip; `face in view` = the rate while a face passes the gates "
            "(frames with a face / time spent on them), i.e. how often the requester is re-verified; "
            "capture fps = frames the source thread delivered in the same window; "
            "the loop always takes the newest frame, so the difference is dropped, never queued. "
            "`face` = fraction of analysed frames where a face passed the quality gates (in detect+embed those "
            "were embedded); `probe ok` = fraction of 10 Hz probe requests that found a fused probe "
            "(good frames < 1 s old); `CPU ms / frame` = process CPU time (all threads) per analysed frame and "
            "`cores busy` = process CPU time / wall time; `CPU ms / frame with a face` = process CPU time spent during "
            "one analyse call on a frame where a face passed the gates. The CPU figures are the ones least "
            "disturbed by other load: on an idle 2-core box the loop's wall time per frame approaches them. "
            "Source speed 1x = camera-like 29.97 fps, 4x = 120 fps (the loop's ceiling).",
            "",
            table(
                [
                    "detector",
                    "loop",
                    "source",
                    "loop fps",
                    "loop fps, face in view",
                    "capture fps",
                    "analyse p50 / p95 ms (all frames)",
                    "analyse p50 / p95 ms (frames with a face)",
                    "face",
                    "CPU ms / frame",
                    "CPU ms / frame with a face (p50)",
                    "cores busy",
                    "probe ok",
                ],
                rows,
            ),
            "",
            f"Ratios, detect+embed fps / detect-only fps: {ratios}.",
            "",
            f"Load average (1 min) before / after: {load_before[0]:.1f} / {load_after[0]:.1f} on "
            f"{os.cpu_count()} cores: other processes share this box, so absolute fps are lower bounds.",
        ]
    )
    write_results(
        "capture",
        figures,
        body,
        extra={
            "load_average": {"before": load_before, "after": load_after},
            "seconds_per_configuration": seconds,
            "settings": base.face.model_dump(mode="json"),
        },
    )


if __name__ == "__main__":
    main()
