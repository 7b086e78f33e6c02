"""The active liveness challenge replayed on recorded frames, the way the kiosk would run it on a looped camera.

`measure` runs the live path on every frame once (face pipeline -> `challenge_face` -> Face Mesh -> eye openness and
head yaw), exactly what `LivenessMonitor.observe` feeds a running challenge.
`replay` then starts a challenge at a given frame of the looped recording and feeds it one measured frame every
`step` frames (29.97 fps / 3 = the kiosk's 10 analysed frames a second) until it passes or fails; a pass counts
only if the passive cues over the same moment do not call an attack (`confirm_pass`, as `ChallengeSession`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kiosk.identity.challenge import (
    BASELINE_FRAMES,
    CHALLENGE,
    ActiveChallenge,
    ChallengeKind,
    ChallengeSample,
    ChallengeState,
)
from kiosk.identity.face import FaceAnalysis, FaceObservation, FacePipeline
from kiosk.identity.facemesh import FaceMesh, eye_aspect_ratio, head_yaw
from kiosk.identity.liveness import PASSIVE, FrameEvidence, frame_evidence, judge
from kiosk.identity.pad import challenge_face, confirm_pass, usable_mesh


@dataclass(frozen=True)
class FrameMeasure:
    """What the challenge sees of one frame; None when the frame has no usable requester face or mesh."""

    eye_openness: float | None
    yaw: float | None
    evidence: FrameEvidence | None = None  # the passive cues' evidence, when the watched face is the requester


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
        analysis = pipeline.analyse(frame, embed=False)
        watched = watch(analysis)
        found = usable_mesh(mesh, frame, watched.detection.landmarks) if watched is not None else None
        evidence = None
        if watched is not None and watched is analysis.requester:  # as LivenessMonitor.observe
            evidence = frame_evidence(frame, watched.detection.landmarks, 0.0, found.xy if found is not None else None)
        if found is None:
            out.append(FrameMeasure(None, None, evidence))
        else:
            out.append(FrameMeasure(eye_aspect_ratio(found.points), head_yaw(found.points), evidence))
    return out


def replay(
    measures: Sequence[FrameMeasure],
    kind: ChallengeKind,
    start: int,
    step: int = 3,
    fps: float = 10,
    passive: bool = True,
) -> Replay:
    """One challenge on the looped recording from frame `start`; runs until it passes or times out. With `passive`,
    a pass is confirmed by the passive cues over their window (PASSIVE.window_s) as the kiosk does (confirm_pass)."""
    challenge = ActiveChallenge(kind, started_at=0.0)
    index, tick = start, 0
    state = challenge.state()
    seen: list[FrameEvidence] = []
    while state.status == "waiting":
        found = measures[index % len(measures)]
        now = tick / fps
        state = challenge.feed(ChallengeSample(now, found.eye_openness, found.yaw))
        if found.evidence is not None:
            seen.append(dataclasses.replace(found.evidence, timestamp=now))
        index += step
        tick += 1
    seconds = (tick - 1) / fps
    if passive:
        state = confirm_pass(state, judge([e for e in seen if e.timestamp >= seconds - PASSIVE.window_s]))
    return Replay(kind, start, state, seconds)


def closed_eye_frames(measures: Sequence[FrameMeasure]) -> list[int]:
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
            if baseline > 0 and item.eye_openness / baseline < CHALLENGE.blink_closed_ratio:
                found.append(index)
                continue
        run.append(item.eye_openness)
    return found
