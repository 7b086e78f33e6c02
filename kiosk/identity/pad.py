"""Presentation-attack detection wired to the live face path: evidence from each analysed frame, a verdict per probe.

`LivenessMonitor.observe` is the ContinuousVerifier's `on_analysis` callback: for the requester's face of every
analysed frame it keeps `FrameEvidence` (face region, Face Mesh landmarks when the model is loaded). `attach`
returns the probe with the passive verdict over the window that ends at the probe's newest frame, so the decision
and its reason travel with the probe to `verify`, the gate and the screen.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from kiosk.errors import ModelError
from kiosk.identity.challenge import (
    CHALLENGE,
    ActiveChallenge,
    ChallengeKind,
    ChallengeSample,
    ChallengeState,
    ChallengeTuning,
    choose_kind,
)
from kiosk.identity.facemesh import FaceMesh, Mesh, eye_aspect_ratio, head_yaw
from kiosk.identity.liveness import PASSIVE, LivenessVerdict, PassiveLiveness, PassiveTuning, frame_evidence
from kiosk.identity.probe import Probe
from kiosk.identity.quality import TOO_SMALL

log = logging.getLogger(__name__)
MIN_MESH_PRESENCE = 0.5


def usable_mesh(mesh: FaceMesh | None, bgr: np.ndarray, landmarks: np.ndarray) -> Mesh | None:
    """The Face Mesh of one face, or None without a model or when the model says the crop is no face."""
    if mesh is None:
        return None
    result = mesh.run(bgr, landmarks)
    return result if result.presence >= MIN_MESH_PRESENCE else None


def challenge_face(analysis: Any) -> Any:
    """The face the active challenge watches in one analysed frame (a FaceAnalysis), or None.

    The requester when there is one; otherwise the most prominent face big enough to count. The quality gates
    serve the embedding and reject a face turned past `quality.MAX_TURN` or blurred by motion, which is exactly
    what a head-turn or blink challenge asks for: without this, the turned frames never reach the challenge.
    """
    requester = getattr(analysis, "requester", None)
    if requester is not None:
        return requester
    in_view = [face for face in getattr(analysis, "faces", ()) if TOO_SMALL not in face.quality.reasons]
    return max(in_view, key=lambda face: face.prominence) if in_view else None


def challenge_sample(mesh: Mesh | None, timestamp: float) -> ChallengeSample:
    """One active-challenge sample from a frame's Face Mesh (None: no face seen in that frame)."""
    if mesh is None:
        return ChallengeSample(timestamp, None, None)
    return ChallengeSample(timestamp, eye_aspect_ratio(mesh.points), head_yaw(mesh.points))


def _xy(mesh: Mesh | None) -> np.ndarray | None:
    return mesh.xy if mesh is not None else None


class LivenessMonitor:
    def __init__(
        self,
        mesh: FaceMesh | None = None,
        *,
        passive: PassiveTuning | None = None,
        challenge: ChallengeTuning | None = None,
    ) -> None:
        self.mesh = mesh
        self.passive = PassiveLiveness(passive or PASSIVE)
        self.challenge_tuning = challenge or CHALLENGE
        self._challenge: ActiveChallenge | None = None
        self._lock = threading.Lock()

    def observe_face(self, bgr: np.ndarray, landmarks: np.ndarray, timestamp: float) -> None:
        found = usable_mesh(self.mesh, bgr, landmarks)
        self.passive.add(frame_evidence(bgr, landmarks, timestamp, _xy(found)))
        self._feed_challenge(challenge_sample(found, timestamp))

    def observe(self, analysed: Any) -> None:
        """ContinuousVerifier callback (an AnalysedFrame): passive evidence from the requester's face, if the frame
        had one; the running challenge watches `challenge_face` (the requester, or a face the gates rejected)."""
        timestamp = analysed.frame.timestamp
        requester: Any = getattr(analysed.analysis, "requester", None)
        watched: Any = challenge_face(analysed.analysis) if self._challenge_running() else requester
        if watched is None:
            self._feed_challenge(ChallengeSample(timestamp, None, None))
            return
        from kiosk.identity.face import as_bgr8

        try:
            bgr = as_bgr8(analysed.frame.image)
            found = usable_mesh(self.mesh, bgr, watched.detection.landmarks)
            if watched is requester:
                self.passive.add(frame_evidence(bgr, watched.detection.landmarks, timestamp, _xy(found)))
            self._feed_challenge(challenge_sample(found, timestamp))
        except Exception:  # liveness evidence is best effort per frame; the verdict says when frames are missing
            log.exception("liveness evidence failed on frame %d", analysed.frame.index)

    def verdict(self, now: float) -> LivenessVerdict:
        return self.passive.verdict(now)

    def attach(self, probe: Probe) -> Probe:
        """The probe carrying the passive verdict over the window ending at its newest frame."""
        return dataclasses.replace(probe, liveness=self.verdict(probe.captured_at))

    def clear(self) -> None:
        self.passive.clear()

    # ---- the active challenge (enrollment) -------------------------------------------------------------------

    def start_challenge(self, kind: ChallengeKind, now: float) -> ChallengeState:
        """Begin a challenge fed by the following analysed frames (needs the Face Mesh model)."""
        if self.mesh is None:
            raise ModelError("the liveness challenge needs the Face Mesh model", "set pad.enabled = true")
        with self._lock:
            self._challenge = ActiveChallenge(kind, now, self.challenge_tuning)
            return self._challenge.state()

    def challenge_state(self, now: float) -> ChallengeState | None:
        """The running (or last) challenge's state; a challenge with no frames at all still times out."""
        with self._lock:
            if self._challenge is None:
                return None
            return self._challenge.feed(ChallengeSample(now, None, None))

    def _challenge_running(self) -> bool:
        with self._lock:
            return self._challenge is not None and self._challenge.state().status == "waiting"

    def _feed_challenge(self, sample: ChallengeSample) -> None:
        with self._lock:
            if self._challenge is not None:
                self._challenge.feed(sample)


class Recorder(Protocol):
    def record(self, action: str, **details: Any) -> None: ...


@dataclass(frozen=True)
class ChallengeReport:
    status: Literal["waiting", "passed", "failed", "off"]  # off: the terminal cannot run a challenge
    prompt: str
    message: str


CHALLENGE_OFF = ChallengeReport("off", "", "liveness checks are off (pad.enabled)")


class ChallengeSession:
    """The terminal's liveness challenge as the app runs it: started for a purpose ("enrollment" or the admin
    action it guards), polled, logged once when it ends. `vouches_for` tells whether a recent pass covers a
    purpose, so a check passed to unlock the admin screen never lets anyone enrol (and the other way round)."""

    def __init__(
        self,
        monitor: LivenessMonitor | None,
        policy: str,
        audit: Recorder,
        *,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.monitor = monitor if monitor is not None and monitor.mesh is not None else None
        self.policy = policy
        self.audit = audit
        self._wall = wall
        self._clock = clock
        self._kind: ChallengeKind | None = None
        self._purpose = ""
        self._passed_at: float | None = None
        self._final: ChallengeReport | None = None  # the ended challenge's outcome, logged once

    @property
    def available(self) -> bool:
        return self.monitor is not None

    def start(self, purpose: str) -> ChallengeReport:
        if self.monitor is None:
            return CHALLENGE_OFF
        self._kind = choose_kind(self.policy)
        self._purpose = purpose
        self._passed_at = None
        self._final = None
        return _report(self.monitor.start_challenge(self._kind, self._wall()))

    def status(self) -> ChallengeReport:
        if self.monitor is None:
            return CHALLENGE_OFF
        if self._final is not None:
            return self._final
        now = self._wall()
        state = self.monitor.challenge_state(now)
        if state is None or self._kind is None:
            return ChallengeReport("failed", "", "no challenge was started")
        if state.status == "waiting":
            return _report(state)
        state = confirm_pass(state, self.monitor.verdict(now))
        if state.passed:
            self._passed_at = self._clock()
        self._final = _report(state)
        self.audit.record("liveness-challenge", kind=self._kind, purpose=self._purpose, passed=state.passed)
        return self._final

    def vouches_for(self, purpose: str, within_s: float) -> bool:
        """A challenge for `purpose` passed less than `within_s` ago (and was not used up)."""
        passed_at = self._passed_at
        return self._purpose == purpose and passed_at is not None and self._clock() - passed_at <= within_s

    def use_up(self) -> None:
        self._passed_at = None


def confirm_pass(state: ChallengeState, verdict: LivenessVerdict) -> ChallengeState:
    """A seen blink or turn counts only when the passive cues over the same moment do not call an attack: a
    recording that happens to show the asked movement on a screen still shows the screen (colour moire)."""
    if not state.passed or not verdict.attack:
        return state
    return ChallengeState("failed", state.prompt, f"{state.message}, but {verdict.reason}")


def _report(state: ChallengeState) -> ChallengeReport:
    return ChallengeReport(state.status, state.prompt, state.message)
