"""A question sent on someone's first frames at the camera: decided at once, or tried again as the fusion window
fills (kiosk.app.live.LiveCamera.with_fuller_window), on the face video.

    .venv/bin/python -m bench.bench_first_frames

The clip, shots, enrolment directions and replay phases of bench_video_enrolment (the wizard's 5 frames as
templates, as the kiosk enrols). A question is asked at every analysed frame showing him; its probe is the live
fusion of his recent frames (up to FUSE_FRAMES within FUSE_MAX_AGE_S). At once: the gate decides on that probe.
With the retry: a refused probe of fewer than FUSE_FRAMES frames is tried again on each later probe with more
frames, for at most FUSE_MAX_AGE_S, as the kiosk does. Reported at the shipped tau and at the calibration's
strict threshold. No impostor video exists here, so the figure is the owner's FRR only; the retry never lowers
tau, it only waits for a fuller probe.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from bench.bench_video_enrolment import rate
from bench.common import table, write_results
from bench.face_video import (
    DIRECTION_LABELS,
    VIDEO_METHODS,
    Frame,
    analyse_clip,
    fuse_window,
    probe_directions,
)
from bench.sensitive_video import VIDEO_PHASES, VIDEO_STEP
from kiosk.calibration.active import active_calibration
from kiosk.calibration.embed import load_embedder
from kiosk.config import load_config
from kiosk.identity.face import FaceEmbedder
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S

FULL = FUSE_FRAMES["face"]
WINDOW_S = FUSE_MAX_AGE_S["face"]


@dataclass(frozen=True)
class Tried:
    after_s: float  # since the question was sent
    frames: int
    vector: np.ndarray


def question_chains(analysed: Sequence[Frame], probed: set[int]) -> list[list[Tried]]:
    """Per question (an analysed frame showing him among `probed`): its probe at once, then each later probe within
    WINDOW_S with more frames than the last one tried, while that one has fewer than FULL (an empty chain: no
    probe at all, a refusal)."""
    seen: list[Frame] = []
    probes: list[tuple[float, Frame | None]] = []
    asks: list[int] = []
    for frame in analysed:
        if frame.index not in probed:
            continue
        seen.append(frame)
        probes.append((frame.stamp, fuse_window(seen, frame.stamp, FULL, WINDOW_S, False)))
        if frame.owner:
            asks.append(len(probes) - 1)
    chains: list[list[Tried]] = []
    for at in asks:
        asked, first = probes[at]
        chain = [] if first is None else [Tried(0.0, first.faces_in_view, cast(np.ndarray, first.vector))]
        for stamp, fused in probes[at + 1 :]:
            if not chain or chain[-1].frames >= FULL or stamp - asked > WINDOW_S:
                break
            if fused is not None and fused.faces_in_view > chain[-1].frames:
                chain.append(Tried(stamp - asked, fused.faces_in_view, cast(np.ndarray, fused.vector)))
        chains.append(chain)
    return chains


@dataclass(frozen=True)
class Outcome:
    asks: int
    few_frames: int  # questions whose first probe had fewer than FULL frames
    refused_at_once: int
    refused_with_retry: int
    waits_s: list[float]  # of the questions the retry turned from refused into recognised


def outcome(chains: list[list[Tried]], templates: np.ndarray, threshold: float) -> Outcome:
    refused_at_once = refused_with_retry = few = 0
    waits: list[float] = []
    for chain in chains:
        scores = [float(np.max(templates @ tried.vector)) for tried in chain]
        few += bool(chain) and chain[0].frames < FULL
        if not scores or scores[0] < threshold:
            refused_at_once += 1
            passing = [tried.after_s for tried, score in zip(chain, scores, strict=True) if score >= threshold]
            if passing:
                waits.append(passing[0])
            else:
                refused_with_retry += 1
    return Outcome(len(chains), few, refused_at_once, refused_with_retry, waits)


def main() -> None:
    config = load_config(path=None)
    embedder = cast(FaceEmbedder, load_embedder(config, "face"))
    calibration = active_calibration(config, "face", embedder.model_sha256)
    thresholds = {
        f"shipped tau ({calibration.rule})": calibration.threshold,
        "strict threshold": calibration.operating_points["strict"].threshold,
    }
    frames = analyse_clip(embedder, config.paths.eval_data_dir / "face_video", config.face.min_face_px)
    _, directions = probe_directions(frames)
    _, choose, make = VIDEO_METHODS["today"]
    rows: list[list[str]] = []
    figures: dict[str, float] = {}
    for name, threshold in thresholds.items():
        for direction, (shot, probed) in directions.items():
            totals = Outcome(0, 0, 0, 0, [])
            for phase in range(VIDEO_PHASES):
                enrol = [f for f in shot if f.index % VIDEO_STEP == phase]
                templates = make(choose(enrol), embedder.model_sha256)
                one = outcome(question_chains(frames[phase::VIDEO_STEP], probed), templates, threshold)
                totals = Outcome(
                    totals.asks + one.asks,
                    totals.few_frames + one.few_frames,
                    totals.refused_at_once + one.refused_at_once,
                    totals.refused_with_retry + one.refused_with_retry,
                    totals.waits_s + one.waits_s,
                )
            key = f"face_video.{direction}.{'shipped' if name.startswith('shipped') else 'strict'}"
            figures[f"{key}.frr_at_once"] = totals.refused_at_once / totals.asks
            figures[f"{key}.frr_with_retry"] = totals.refused_with_retry / totals.asks
            rows.append(
                [
                    f"{name} {threshold:.4f}",
                    DIRECTION_LABELS[direction],
                    str(totals.asks),
                    str(totals.few_frames),
                    rate(totals.refused_at_once, totals.asks),
                    rate(totals.refused_with_retry, totals.asks),
                    f"{np.median(totals.waits_s):.2f}" if totals.waits_s else "-",
                ]
            )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    text = "\n".join(
        [
            f"Clip `short_hamilton_clip.mp4` ({len(frames)} frames), his shots and enrolment directions as in "
            f"[video_enrolment.md](video_enrolment.md); the wizard's 5 frames are his templates. A question at every "
            f"analysed frame showing him ({VIDEO_PHASES} replay phases); its probe fuses up to {FULL} of his frames "
            f"within {WINDOW_S:.0f} s. Intervals: Clopper-Pearson 95 % over questions, which are consecutive frames "
            "of one person, so the real uncertainty is much wider. Owner only: no impostor video exists here.",
            "",
            table(
                [
                    "threshold",
                    "enrol / ask",
                    "questions",
                    f"asked on fewer than {FULL} frames",
                    "refused at once [95 % CI]",
                    "refused with the retry [95 % CI]",
                    "median wait of the retried that passed (s)",
                ],
                rows,
            ),
            "",
            f"Machine shared with other jobs (load average {load} at the end); the figures are counts, not timings.",
        ]
    )
    print(text)
    write_results("first_frames", figures, text)


if __name__ == "__main__":
    main()
