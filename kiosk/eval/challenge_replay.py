"""The active liveness challenge replayed on recorded frames, the way the kiosk would run it on a looped camera.

`measure` runs the live path on every frame once (face pipeline -> `challenge_face` -> Face Mesh -> eye openness and
head yaw), exactly what `LivenessMonitor.observe` feeds a running challenge.
`replay` then starts a challenge at a given frame of the looped recording and feeds it one measured frame every
`step` frames (29.97 fps / 3 = the kiosk's 10 analysed frames a second) until it passes or fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kiosk.config import PadConfig
from kiosk.identity.challenge import BASELINE_FRAMES, ActiveChallenge, ChallengeKind, ChallengeSample, ChallengeState
from kiosk.identity.face import FaceAnalysis, FaceObservation, FacePipeline
from kiosk.identity.facemesh import FaceMesh, eye_aspect_ratio, head_yaw
from kiosk.identity.pad import challenge_face, usable_mesh


@dataclass(frozen=True)
class FrameMeasure:
    """What the challenge sees of one frame; None when the frame has no usable requester face or mesh."""

    eye_openness: float | None
    yaw: float | None


@dataclass(frozen=True)
class Replay:
    kind: ChallengeKind
    start: int  # frame index the challenge started at
    state: ChallengeState
    seconds: float  # challenge time when it passed or failed


def requester_only(analysis: FaceAnalysis) -> FaceObservation | None:
    """The peer of `challenge_face`: only a face that passed the quality gates (what the kiosk fed before)."""
    return analysis.requester


def measure(
    frames: Sequence[np.ndarray],
    pipeline: FacePipeline,
    mesh: FaceMesh,
    watch: Callable[[FaceAnalysis], FaceObservation | None] = challenge_face,
) -> list[FrameMeasure]:
    out = []
    for frame in frames:
        watched = watch(pipeline.analyse(frame, embed=False))
        found = usable_mesh(mesh, frame, watched.detection.landmarks) if watched is not None else None
        if found is None:
            out.append(FrameMeasure(None, None))
        else:
            out.append(FrameMeasure(eye_aspect_ratio(found.points), head_yaw(found.points)))
    return out


def replay(
    measures: Sequence[FrameMeasure], kind: ChallengeKind, start: int, config: PadConfig, step: int = 3, fps: float = 10
) -> Replay:
    """One challenge on the looped recording from frame `start`; runs until it passes or times out."""
    challenge = ActiveChallenge(kind, config, started_at=0.0)
    index, tick = start, 0
    state = challenge.state()
    while state.status == "waiting":
        found = measures[index % len(measures)]
        state = challenge.feed(ChallengeSample(tick / fps, found.eye_openness, found.yaw))
        index += step
        tick += 1
    return Replay(kind, start, state, (tick - 1) / fps)


def closed_eye_frames(measures: Sequence[FrameMeasure], config: PadConfig) -> list[int]:
    """Frames whose eye openness falls below `blink_closed_ratio` of the median of the frames before them
    (within the same run of frames with a face): the candidates for a blink the challenge could see."""
    found: list[int] = []
    run: list[float] = []
    for index, item in enumerate(measures):
        if item.eye_openness is None:
            run = []
            continue
        if len(run) >= BASELINE_FRAMES:
            baseline = float(np.median(run[-10:]))
            if baseline > 0 and item.eye_openness / baseline < config.blink_closed_ratio:
                found.append(index)
                continue
        run.append(item.eye_openness)
    return found
