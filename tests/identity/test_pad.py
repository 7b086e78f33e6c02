"""LivenessMonitor wiring: evidence from the verifier's analysed frames, the verdict attached to the probe."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kiosk.identity.challenge import CHALLENGE
from kiosk.identity.pad import ChallengeSession, LivenessMonitor
from kiosk.identity.probe import Probe

LANDMARKS = np.array([[80, 90], [120, 90], [100, 110], [85, 130], [115, 130]], np.float32)


@dataclass
class Detection:
    landmarks: np.ndarray


@dataclass
class Face:
    detection: Detection


@dataclass
class Analysis:
    requester: Face | None


@dataclass
class Frame:
    image: np.ndarray
    timestamp: float
    index: int


@dataclass
class Analysed:
    frame: Frame
    analysis: Analysis | None


def feed(monitor: LivenessMonitor, images: list[np.ndarray], with_face: bool = True) -> None:
    for index, image in enumerate(images):
        analysis = Analysis(Face(Detection(LANDMARKS)) if with_face else None)
        monitor.observe(Analysed(Frame(image, index / 10, index), analysis))


def probe_at(timestamp: float) -> Probe:
    return Probe("face", np.ones(4, np.float32) / 2, "c" * 64, timestamp)


def test_a_frozen_feed_makes_the_probe_blocking_with_the_reason() -> None:
    still = np.random.default_rng(0).integers(0, 255, (200, 200, 3), dtype=np.uint8)
    monitor = LivenessMonitor()
    feed(monitor, [still] * 8)
    probe = monitor.attach(probe_at(0.7))
    assert probe.liveness is not None and probe.liveness.decision == "attack"
    assert probe.liveness_blocks
    assert "does not change" in probe.liveness.reason


def test_a_noisy_changing_feed_is_live_and_frames_without_a_face_are_ignored() -> None:
    rng = np.random.default_rng(1)
    base = rng.integers(40, 200, (200, 200, 3)).astype(np.float32)
    frames = [np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8) for _ in range(8)]
    monitor = LivenessMonitor()
    feed(monitor, frames)
    feed(monitor, frames, with_face=False)  # nothing recorded
    probe = monitor.attach(probe_at(0.7))
    assert probe.liveness is not None
    assert probe.liveness.decision == "live", probe.liveness.reason
    assert probe.liveness.frames == 8
    assert not probe.liveness_blocks
    assert "nonrigid_residual" not in probe.liveness.cues  # no Face Mesh loaded: the rigid cue does not run


def test_too_few_frames_leave_the_probe_undecided() -> None:
    monitor = LivenessMonitor()
    feed(monitor, [np.zeros((200, 200, 3), np.uint8)] * 2)
    probe = monitor.attach(probe_at(0.2))
    assert probe.liveness is not None and probe.liveness.decision == "undecided"
    assert not probe.liveness_blocks


class ScriptedMesh:
    """Stands in for the Face Mesh model: returns synthetic landmarks with the scripted eye openness."""

    def __init__(self, openness: list[float]) -> None:
        self.openness = openness

    def run(self, bgr: np.ndarray, landmarks: np.ndarray):  # type: ignore[no-untyped-def]
        from test_challenge import mesh

        from kiosk.identity.facemesh import Mesh

        return Mesh(mesh(self.openness.pop(0) if self.openness else 0.3, 0.0), 1.0)


def test_the_enrollment_challenge_is_fed_by_the_analysed_frames() -> None:
    rng = np.random.default_rng(2)
    frames = [rng.integers(0, 255, (200, 200, 3), dtype=np.uint8) for _ in range(9)]
    monitor = LivenessMonitor(ScriptedMesh([0.3] * 5 + [0.1, 0.1] + [0.3] * 2))  # type: ignore[arg-type]
    assert monitor.challenge_state(0.0) is None
    monitor.start_challenge("blink", now=0.0)
    feed(monitor, frames)
    state = monitor.challenge_state(0.9)
    assert state is not None and state.passed, state


def test_the_challenge_times_out_without_faces_and_needs_the_mesh_model() -> None:
    import pytest

    from kiosk.errors import ModelError

    with pytest.raises(ModelError):
        LivenessMonitor().start_challenge("blink", now=0.0)
    monitor = LivenessMonitor(ScriptedMesh([]))  # type: ignore[arg-type]
    monitor.start_challenge("turn-left", now=0.0)
    feed(monitor, [np.zeros((200, 200, 3), np.uint8)] * 3, with_face=False)
    state = monitor.challenge_state(CHALLENGE.timeout_s + 1)
    assert state is not None and state.status == "failed" and "no face" in state.message


@dataclass
class Quality:
    reasons: tuple[str, ...]


@dataclass
class RejectedFace:
    detection: Detection
    quality: Quality
    prominence: float


@dataclass
class GatedAnalysis:
    """A frame whose only face failed the quality gates (no requester), as a head turn or a blink produces."""

    faces: tuple[RejectedFace, ...]
    requester: Face | None = None


def test_a_running_challenge_watches_a_face_the_quality_gates_rejected_but_the_passive_cues_do_not() -> None:
    monitor = LivenessMonitor(ScriptedMesh([0.3] * 5 + [0.1, 0.1] + [0.3] * 2))  # type: ignore[arg-type]
    monitor.start_challenge("blink", now=0.0)
    rng = np.random.default_rng(3)
    turned = RejectedFace(Detection(LANDMARKS), Quality(("too-turned",)), 1.0)
    tiny = RejectedFace(Detection(LANDMARKS), Quality(("too-small",)), 5.0)  # too small to count: never watched
    for index in range(9):
        image = rng.integers(0, 255, (200, 200, 3), dtype=np.uint8)
        monitor.observe(Analysed(Frame(image, index / 10, index), GatedAnalysis((tiny, turned))))  # type: ignore[arg-type]
    state = monitor.challenge_state(0.9)
    assert state is not None and state.passed, state
    assert monitor.verdict(0.9).frames == 0  # the passive cues judge the requester only


def test_the_challenge_ignores_faces_too_small_to_count() -> None:
    monitor = LivenessMonitor(ScriptedMesh([0.3] * 5 + [0.1, 0.1] + [0.3] * 2))  # type: ignore[arg-type]
    monitor.start_challenge("blink", now=0.0)
    tiny = RejectedFace(Detection(LANDMARKS), Quality(("too-small",)), 5.0)
    for index in range(9):
        monitor.observe(Analysed(Frame(np.zeros((200, 200, 3), np.uint8), index / 10, index), GatedAnalysis((tiny,))))  # type: ignore[arg-type]
    state = monitor.challenge_state(CHALLENGE.timeout_s + 1)
    assert state is not None and state.status == "failed" and "no face" in state.message


class Log:
    def __init__(self) -> None:
        self.entries: list[tuple[str, dict[str, object]]] = []

    def record(self, action: str, **details: object) -> None:
        self.entries.append((action, details))


class Clock:
    """Wall and monotonic time at once; starts at 0, the first fed frame's timestamp."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


BLINK = [0.3] * 5 + [0.1, 0.1] + [0.3] * 2


def passed_session(purpose: str, log: Log, clock: Clock) -> ChallengeSession:
    monitor = LivenessMonitor(ScriptedMesh(list(BLINK)))  # type: ignore[arg-type]
    session = ChallengeSession(monitor, "blink", log, wall=clock, clock=clock)
    assert session.start(purpose).status == "waiting"
    feed(monitor, [np.random.default_rng(i).integers(0, 255, (200, 200, 3), dtype=np.uint8) for i in range(9)])
    clock.now = max(clock.now, 0.9)
    assert session.status().status == "passed"
    return session


def test_a_challenge_passed_for_an_admin_action_does_not_vouch_for_an_enrollment() -> None:
    log, clock = Log(), Clock()
    admin = passed_session("unlock", log, clock)
    assert admin.vouches_for("unlock", 60) and not admin.vouches_for("enrollment", 300)
    admin.status()  # polled again after the end: logged once
    assert log.entries == [("liveness-challenge", {"kind": "blink", "purpose": "unlock", "passed": True})]


def test_an_enrollment_challenge_vouches_once_and_only_while_recent() -> None:
    log, clock = Log(), Clock()
    session = passed_session("enrollment", log, clock)
    assert session.vouches_for("enrollment", 300)
    clock.now += 301
    assert not session.vouches_for("enrollment", 300)
    session = passed_session("enrollment", log, clock)
    session.use_up()
    assert not session.vouches_for("enrollment", 300)


def test_without_the_face_mesh_model_the_session_is_off() -> None:
    session = ChallengeSession(LivenessMonitor(), "either", Log())
    assert not session.available
    assert session.start("unlock").status == "off" and session.status().status == "off"
    assert not ChallengeSession(None, "either", Log()).available


def test_a_seen_blink_does_not_pass_when_the_passive_cues_call_an_attack() -> None:
    """Landmarks that blink on a picture that never changes (a replayed clip frozen on screen, an injected feed)."""
    log, clock = Log(), Clock()
    monitor = LivenessMonitor(ScriptedMesh(list(BLINK)))  # type: ignore[arg-type]
    session = ChallengeSession(monitor, "blink", log, wall=clock, clock=clock)
    session.start("unlock")
    still = np.random.default_rng(5).integers(0, 255, (200, 200, 3), dtype=np.uint8)
    feed(monitor, [still] * 9)
    clock.now = 0.9
    report = session.status()
    assert report.status == "failed" and "blink seen" in report.message and "does not change" in report.message
    assert not session.vouches_for("unlock", 60)
    assert session.status() == report and log.entries[-1][1]["passed"] is False and len(log.entries) == 1
