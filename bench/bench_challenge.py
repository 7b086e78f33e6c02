"""The active liveness challenge (enrollment, admin actions) on the shared face video and on attacks made from it.

The kiosk shows a looped recording as its camera; a challenge (blink / turn-left / turn-right, `pad.challenge`
"either" picks one at random) starts at every `--stride` frames of the loop and runs with the default `[pad]`
tuning (timeout `CHALLENGE.timeout_s`) on the live path: face pipeline -> requester passing the quality gates
-> Face Mesh -> eye openness and head yaw (bench/challenge_replay.py). Every third frame is fed (29.97 fps / 3
= the kiosk's 10 analysed frames a second).

Material: the video itself (a real person, but to the kiosk it is a recording: read as bona fide when the question
is "does a real turn pass", as a replay attack when the question is "can a recording pass"); the same video
re-rendered as filmed off a screen (pad_attacks.screen_replay); still frames of it repeated unchanged (a frozen or
injected feed); the same stills printed and held by a moving hand (pad_attacks.printed_photo, 7 s).

    .venv/bin/python -m bench.bench_challenge [--stride 15] [--data DIR]
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np

from bench import pad_attacks
from bench.bench_pad import VIDEO, read_video
from bench.challenge_replay import FrameMeasure, Replay, closed_eye_frames, measure, replay, requester_only
from bench.common import table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.identity.challenge import CHALLENGE, ChallengeKind
from kiosk.identity.face import FacePipeline
from kiosk.identity.facemesh import FaceMesh, load_face_mesh
from kiosk.identity.pad import challenge_face

KINDS: tuple[ChallengeKind, ...] = get_args(ChallengeKind)
STILLS = (95, 150, 172, 130)  # three frontal frames of the performer and one turned to his right
FPS = 29.97


def outcomes(
    measures: Sequence[FrameMeasure], starts: Sequence[int], config: KioskConfig, step: int, passive: bool = True
) -> list[Replay]:
    return [replay(measures, kind, start, step=step, passive=passive) for kind in KINDS for start in starts]


def summary(name: str, runs: Sequence[Replay]) -> list[list[Any]]:
    rows = []
    for kind in KINDS:
        mine = [run for run in runs if run.kind == kind]
        passed = [run for run in mine if run.state.passed]
        reasons = Counter(
            re.sub(r"\(peak [0-9.]+\)", "(peak above the threshold)", run.state.message)
            for run in mine
            if not run.state.passed
        )
        rows.append(
            [
                name,
                kind,
                len(mine),
                len(passed),
                f"{np.median([run.seconds for run in passed]):.1f} s" if passed else "-",
                "; ".join(f"{reason} ({count})" for reason, count in reasons.most_common()) or "-",
            ]
        )
    return rows


def run_material(
    frames: Sequence[np.ndarray],
    pipeline: FacePipeline,
    mesh: FaceMesh,
    config: KioskConfig,
    stride: int,
    watch: Any,
    passive: bool = True,
) -> tuple[dict[str, list[Replay]], list[FrameMeasure]]:
    starts = list(range(0, len(frames), stride))
    video = measure(frames, pipeline, mesh, watch)
    runs: dict[str, list[Replay]] = {"video (looped)": outcomes(video, starts, config, 3, passive)}
    screen = measure(list(pad_attacks.screen_replay(frames, seed=7)), pipeline, mesh, watch)
    runs["screen replay (looped)"] = outcomes(screen, starts, config, 3, passive)
    runs["frozen still"], runs["printed still"] = [], []
    for index, still in enumerate(STILLS):
        runs["frozen still"] += outcomes(measure([frames[still]], pipeline, mesh, watch), [0], config, 1, passive)
        photo = list(pad_attacks.printed_photo(frames[still], 70, seed=index))
        runs["printed still"] += outcomes(measure(photo, pipeline, mesh, watch), [0], config, 1, passive)
    return runs, video


def passed_counts(runs: dict[str, list[Replay]]) -> dict[str, dict[str, int]]:
    return {
        name: {kind: sum(r.state.passed for r in items if r.kind == kind) for kind in KINDS}
        for name, items in runs.items()
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=15, help="frames between challenge starts (15 = 0.5 s)")
    parser.add_argument("--data", type=Path, default=None, help="evaluation data folder (default KIOSK_DATA)")
    args = parser.parse_args(argv)
    config = load_config()
    frames = read_video((args.data or config.paths.eval_data_dir) / VIDEO)
    pipeline = FacePipeline(config)
    mesh = load_face_mesh(config.paths.models, config.runtime.threads or 1)

    started = time.perf_counter()
    measure(frames, pipeline, mesh)
    per_frame_s = (time.perf_counter() - started) / len(frames)
    runs, video = run_material(frames, pipeline, mesh, config, args.stride, challenge_face)
    before, _ = run_material(frames, pipeline, mesh, config, args.stride, requester_only, passive=False)
    unconfirmed, _ = run_material(frames, pipeline, mesh, config, args.stride, challenge_face, passive=False)

    with_face = [m for m in video if m.eye_openness is not None and m.yaw is not None]
    frontal = [m for m in with_face if abs(m.yaw or 0.0) <= CHALLENGE.turn_min_yaw]
    yaws = [float(m.yaw or 0.0) for m in with_face]
    closed = closed_eye_frames([m if m in frontal else FrameMeasure(None, None) for m in video])
    passes = {
        kind: [round(r.start / FPS, 1) for r in runs["video (looped)"] if r.kind == kind and r.state.passed]
        for kind in KINDS
    }
    # pad.challenge = "either" picks one of the three kinds at random: the chance one attempt passes
    one_attempt = {name: float(np.mean([r.state.passed for r in items])) for name, items in runs.items()}
    figures: dict[str, Any] = {
        "video.frames": len(frames),
        "video.frames_watched": len(with_face),
        "video.frames_frontal": len(frontal),
        "video.eye_openness_frontal_min": min(float(m.eye_openness or 0.0) for m in frontal),
        "video.eye_openness_frontal_median": float(np.median([m.eye_openness for m in frontal])),
        "video.closed_eye_frames": len(closed),
        "video.yaw_min": min(yaws),
        "video.yaw_max": max(yaws),
        "video.pass_starts_s": passes,
        "passed": passed_counts(runs),
        "passed_before": passed_counts(before),
        "passed_without_passive_confirmation": passed_counts(unconfirmed),
        "starts": {name: len(items) // len(KINDS) for name, items in runs.items()},
        "pass_rate_random_kind": one_attempt,
        "measure_ms_per_frame": per_frame_s * 1000,
    }
    rows = [row for name, items in runs.items() for row in summary(name, items)]
    peer_rows = [
        [
            name,
            *(
                f"{counts[kind]} -> {figures['passed_without_passive_confirmation'][name][kind]} -> "
                f"{figures['passed'][name][kind]}"
                for kind in KINDS
            ),
        ]
        for name, counts in figures["passed_before"].items()
    ]
    pad = CHALLENGE
    md = "\n\n".join(
        [
            "Active liveness challenge (kiosk/identity/challenge.py, used at enrollment and for admin access) with the "
            f"default tuning (`CHALLENGE`): timeout {pad.timeout_s:.0f} s; blink = eyes below "
            f"{pad.blink_closed_ratio} of the open-eye baseline and back, frontal frames only; turn = yaw past "
            f"{pad.turn_min_yaw} the asked way and back within {pad.turn_centre_yaw}. A challenge starts every "
            f"{args.stride} frames ({args.stride / FPS:.1f} s) of the looped 10 s face video; one frame in three is "
            "fed "
            "(the kiosk's 10 analysed frames a second) through the live path: face pipeline -> `challenge_face` -> "
            "Face Mesh -> eye openness, yaw.",
            table(["material", "asked", "starts", "passed", "median time to pass", "why the others failed"], rows),
            "**Peers in the same run.** Passed: before this change (the challenge fed only faces that pass the "
            "embedding's quality gates, which reject a face turned past `quality.MAX_TURN`, i.e. the turn the "
            "challenge asks for; no passive check) -> fed `challenge_face`, no passive check -> now (a pass also "
            "needs the passive cues over their window `PASSIVE.window_s` not to call an attack, `confirm_pass`):",
            table(["material", *KINDS], peer_rows),
            "**What the video holds.** "
            f"The challenge sees a face in {len(with_face)} of {len(frames)} frames, {len(frontal)} of them frontal "
            f"(|yaw| <= {pad.turn_min_yaw}). Frontal eye openness (eye aspect ratio): lowest "
            f"{figures['video.eye_openness_frontal_min']:.3f}, median "
            f"{figures['video.eye_openness_frontal_median']:.3f}; "
            f"frontal frames with eyes below {pad.blink_closed_ratio} of the recent baseline (every frame, not one in "
            f"three): {len(closed)}. Head yaw from {min(yaws):.2f} (turned to his right) to {max(yaws):.2f}. So the "
            f"footage holds one clear head turn to the performer's right and back, no turn to his left past "
            f"{pad.turn_min_yaw}, and no blink.",
            "**What the challenge decides, and why.** turn-right passes when it starts with the turn still ahead "
            "within "
            f"the time limit (starts at {passes['turn-right']} s into the loop); everything else times out because the "
            "asked movement was not seen. Blink and turn-left never pass. On a frozen still or a printed still held by "
            "a "
            "moving hand, no kind passes: a photo's landmarks keep the same eye openness and the same nose position "
            "between the cheeks (a tilted plane moves them rigidly), so neither a blink nor frontal-turn-frontal "
            "appears.",
            "**A recording.** To the challenge the plain loop is a recording too: injected into the camera stream "
            "or shown on a display the camera cannot tell from a face, it passes turn-right from the same starts, "
            f"so one attempt with a random kind passes with probability {one_attempt['video (looped)']:.2f}. The "
            "same video filmed off a screen (pad_attacks.screen_replay) shows the asked turn too, but the passive "
            "colour moire cue calls the moment an attack, so the pass is refused: "
            f"{one_attempt['screen replay (looped)']:.2f} per attempt, against "
            f"{figures['passed_without_passive_confirmation']['screen replay (looped)']['turn-right']} turn-right "
            "passes without that check. The moire margin is small (peaks just above `PASSIVE.chroma_max_peak`, see "
            "pad.md) and a real screen filmed out of focus or from afar shows less. A recording that shows all three "
            "actions would pass more often. For admin access the PIN is still needed and every failed check counts "
            "like a wrong PIN. This is the limit of an active challenge on an ordinary camera: it stops photos and "
            "frozen feeds, and screens only as far as the passive cues see them.",
            "**Two fixes this benchmark found.** (1) The challenge used to watch only the face that passes the "
            "embedding's quality gates, which drop a face turned past `quality.MAX_TURN`: the peer table shows that no "
            "head turn could pass on this video. It now watches `challenge_face` (the requester, else the most "
            "prominent face big enough to count). (2) With turned faces fed, the looped screen replay passed the blink "
            "challenge from 4 of 19 starts while developing this (a profile's eye looks wide, so the frontal eye read "
            "as shut, and a 'blink' spanned the cut where the face left the view); eye openness now counts only on "
            "frontal frames and a face leaving the view ends a closing (tests/identity/test_challenge.py). Blink "
            "passes on this material: 0.",
            f"Per frame, detection + quality + Face Mesh: {per_frame_s * 1000:.1f} ms (mean, shared 2-core box).",
            "Not covered: real prints and screens (every attack is a synthetic rendering of this one video), other "
            "people, glasses, low light, and a real blink (there is none in this footage, so the blink rule is shown "
            "only on synthetic landmark sequences in tests/identity/test_challenge.py and tests/security/"
            "test_admin_access.py).",
        ]
    )
    print(md)
    write_results("challenge", figures, md)


if __name__ == "__main__":
    main()
