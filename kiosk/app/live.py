"""The live camera: frames analysed on the verifier's thread, the presence badge, and fresh verifications.

The face pipeline runs continuously on the ContinuousVerifier's thread; everything here reads its latest
analysis, so the pipeline is only ever used from that one thread. Whom a probe verifies is always decided by
the gate (kiosk.identity.gate) under the assistant's rule, the same decision the answer path makes.
"""

from __future__ import annotations

import logging
import threading
import time

import cv2
import numpy as np

from kiosk.app.palm import PLACE_PALM, LivePalm, beside_face, hides_memory
from kiosk.app.views import CameraState, FaceBox, FrameView, Presence, PresenceState, Verification
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.identity.face import FaceAnalysis, FaceEmbedder
from kiosk.identity.gate import MULTIPLE_FACES, GateDecision, Identity, describe, gate, verified_identity
from kiosk.identity.pad import LivenessMonitor
from kiosk.identity.probe import Probe
from kiosk.identity.sources import SourceState, ThreadedSource, as_bgr8
from kiosk.identity.sources.none import NO_CAMERA, NoCamera
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S, ContinuousVerifier, FuseResult, ProbeFuser
from kiosk.memory.note import Template
from kiosk.security.audit import AuditLog

DISPLAY_MAX_WIDTH = 960
TEMPLATE_CACHE_S = 2.0  # the badge re-reads the enrolled templates at most this often
ANALYSIS_FPS = 10.0  # camera frames analysed per second at most: leaves CPU for the LLM
STALE_FRAME_S = 2.0  # a frame older than this while the camera reconnects means "no camera"
# A step-up (the asker's private note needs more proof) fuses a longer window than a question's probe: about two
# seconds of analysed frames, twice the frames of FUSE_FRAMES, collected for at most STEP_UP_WAIT_S.
STEP_UP_FRAMES = 10
STEP_UP_WINDOW_S = 2.0
STEP_UP_WAIT_S = 2.5
CAMERA_STATES: dict[SourceState, CameraState] = {
    SourceState.STARTING: "starting",
    SourceState.RUNNING: "live",
    SourceState.RECONNECTING: "reconnecting",
    SourceState.ENDED: "ended",
    SourceState.FAILED: "lost",
}
QUALITY_HINTS = {
    "too-small": "Come a little closer",
    "too-blurred": "Hold still for a moment",
    "too-turned": "Look straight at the camera",
    "too-dark": "More light on your face, please",
}
NOT_CALIBRATED = "Not calibrated yet: answers use no personal memory"
PALM_MIN_WAIT_S = 0.5  # a palm probe beside a face waits at least this long for fresh scanner frames
PALM_VIEW_PERIOD_S = 0.2  # without a camera, the screen shows the scanner's state this often

log = logging.getLogger("kiosk.app")


def quality_hint(analysis: FaceAnalysis | None) -> str | None:
    """What the person should do so the kiosk gets a usable face, in a few words."""
    if analysis is None:
        return None
    if analysis.second_face_in_view:
        return "Only one person in view, please"
    if not analysis.faces:
        return None
    if analysis.embedding is not None:
        return None
    best = max(analysis.faces, key=lambda face: face.prominence)
    for code in best.quality.reasons:
        if code in QUALITY_HINTS:
            return QUALITY_HINTS[code]
    return analysis.reason or None


def presence_of(decision: GateDecision, identity: Identity | None) -> Presence:
    """The badge's state for a gate decision and the person it verified (None: nobody single)."""
    if decision.reason == MULTIPLE_FACES:
        return Presence("multiple")
    if identity is not None:
        return Presence("recognised", identity)
    return Presence("unknown", best_score=decision.best_score)


def verification_for(assistant: Assistant, probe: Probe) -> Verification:
    """The verification of an action sent now: the answer path's own gate decision for this probe."""
    try:
        decision = assistant.verify(probe, record=False)
    except CalibrationError as exc:  # no tau for this modality: nobody can be recognised
        return Verification(Presence("unknown"), probe, exc.one_line())
    presence = presence_of(decision, assistant.identity(decision))
    return Verification(
        presence, probe, None if presence.state == "recognised" else describe(decision, assistant.name_of)
    )


def longer_fusion(fuser: ProbeFuser, frames: int, window_s: float, now: float | None = None) -> FuseResult:
    """The fuser's recent observations fused over a longer window (more frames, older ones) than its own."""
    longer = ProbeFuser(
        fuser.modality,
        fuser.model_sha256,
        fuse_frames=frames,
        max_age_s=window_s,
        consistency_min_cosine=fuser.consistency_min_cosine,
    )
    for observation in fuser.observations():
        longer.add(observation.vector, observation.timestamp, observation.faces_in_view)
    return longer.fuse(time.time() if now is None else now)


def _display_image(image: np.ndarray) -> tuple[np.ndarray, float]:
    bgr = as_bgr8(image)
    scale = min(1.0, DISPLAY_MAX_WIDTH / bgr.shape[1])
    if scale < 1.0:
        bgr = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), scale


class LiveCamera:
    """The camera, the face analysis loop and its fused probes, and who they show."""

    def __init__(
        self,
        config: KioskConfig,
        assistant: Assistant,
        face: FaceEmbedder,
        source: ThreadedSource | None,
        audit: AuditLog,
        liveness: LivenessMonitor | None = None,
        palm: LivePalm | None = None,
    ) -> None:
        """`source` None: a terminal without a camera (palm-only); `palm`: the scanner beside the camera."""
        self.config = config
        self.assistant = assistant
        self.face = face
        self.has_camera = source is not None
        self.source = source if source is not None else NoCamera()
        self.palm = palm
        self.audit = audit
        self.liveness = liveness
        self.threshold_problem: str | None = None  # why no face tau is usable, shown instead of a name
        self.fuser = ProbeFuser.for_modality("face", face.model_sha256)
        self._analysis_period_s = 1.0 / ANALYSIS_FPS
        self._last_analysis = 0.0
        self.verifier = ContinuousVerifier(
            self.source, self._paced_analyse, self.fuser, on_analysis=liveness.observe if liveness is not None else None
        )
        self._templates: tuple[float, list[Template], dict[int, str]] = (0.0, [], {})
        self._templates_lock = threading.Lock()
        self._last_view_index = -1

    def start(self) -> None:
        if self.has_camera:
            self.source.start()
            self.verifier.start()
        if self.palm is not None:
            self.palm.start()

    def stop(self) -> None:
        self.verifier.stop(stop_source=True)
        if self.palm is not None:
            self.palm.stop()

    def _paced_analyse(self, image: np.ndarray) -> FaceAnalysis:
        """At most ANALYSIS_FPS analyses a second: the kiosk needs a steady badge, not every frame.

        The wait comes before the analysis, so the frame is at most one period old and keeps its own timestamp.
        """
        wait = self._last_analysis + self._analysis_period_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_analysis = time.monotonic()
        return self.face.analyse(image)

    # --- templates for the badge ---------------------------------------------------------------------
    def _enrolled(self) -> tuple[list[Template], dict[int, str]]:
        with self._templates_lock:
            loaded_at, templates, names = self._templates
            if time.monotonic() - loaded_at > TEMPLATE_CACHE_S:
                store = self.assistant.store
                templates = store.templates("face")
                names = {user.id: user.name for user in store.list_users() if user.id is not None}
                self._templates = (time.monotonic(), templates, names)
            return templates, names

    def forget_templates(self) -> None:
        """Enrolment or a deletion changed who is enrolled: the badge reads the store again."""
        with self._templates_lock:
            self._templates = (0.0, [], {})

    def _badge(self, probe: Probe | None, faces_seen: int) -> Presence:
        """Who the live badge shows: the gate under the assistant's rule, on recently read templates."""
        if faces_seen > 1 or (probe is not None and probe.faces_in_view > 1):
            return Presence("multiple")
        if probe is None:
            return Presence("unclear" if faces_seen else "nobody")
        try:
            rule = self.assistant.rule(probe)
        except CalibrationError:
            return Presence("unknown")
        templates, names = self._enrolled()
        decision = gate(probe, templates, rule)
        return presence_of(decision, verified_identity(decision, names.get))

    # --- camera -------------------------------------------------------------------------------------
    def _camera(self) -> tuple[CameraState, str]:
        status = self.source.status()
        return CAMERA_STATES.get(status.state, "lost"), status.message

    def analyse_latest(self) -> FrameView:
        if not self.has_camera:
            return self._palm_only_view()
        latest = self.verifier.latest()
        deadline = time.monotonic() + 0.3
        while (latest is None or latest.frame.index == self._last_view_index) and time.monotonic() < deadline:
            time.sleep(0.01)
            latest = self.verifier.latest()
        camera, message = self._camera()
        if latest is None:
            presence = Presence("no-camera") if camera in ("lost", "reconnecting") else Presence("nobody")
            return FrameView(None, time.time(), (), presence, None, camera if camera != "live" else "starting", message)
        self._last_view_index = latest.frame.index
        image, scale = _display_image(latest.frame.image)
        analysis: FaceAnalysis | None = latest.analysis
        boxes: list[FaceBox] = []
        faces_seen = 0
        if analysis is not None:
            faces_seen = analysis.faces_in_view
            for index, face in enumerate(analysis.faces):
                x, y, w, h = face.detection.box
                primary = index == analysis.requester_index
                boxes.append(FaceBox(int(x * scale), int(y * scale), int(w * scale), int(h * scale), primary))
        presence = self._badge(self.verifier.probe().probe, faces_seen)
        stale = time.time() - latest.frame.timestamp > STALE_FRAME_S
        if camera in ("lost", "reconnecting") and stale:
            presence = Presence("no-camera")
        hint = quality_hint(analysis) or latest.error
        if self.threshold_problem and presence.state not in ("nobody", "unclear"):
            hint = NOT_CALIBRATED
        return FrameView(
            image, latest.frame.timestamp, tuple(boxes), presence, hint, camera if stale else "live", message
        )

    def verify_now(self) -> Verification:
        """A probe whose newest frame was captured after this call began (never a cached login).

        Waits up to ui.verify_timeout_s for such a frame with a usable face; the fused probe may add the
        few good frames just before it (ProbeFuser's window), all within the face fusion window. With a palm
        scanner, its fresh palm probe goes beside a verified face, or stands in when no face is verified.
        """
        asked_at = time.time()
        if not self.has_camera:
            return self._palm_now(asked_at)
        return self._with_palm(self._face_now(asked_at), asked_at)

    def _face_now(self, asked_at: float) -> Verification:
        deadline = time.monotonic() + self.config.ui.verify_timeout_s
        while True:
            latest = self.verifier.latest()
            fresh = latest is not None and latest.frame.timestamp >= asked_at
            fused = self.verifier.probe()
            probe = fused.probe if fused.probe is not None and fused.probe.captured_at >= asked_at else None
            if probe is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if latest is None or not fresh:
            _state, message = self._camera()
            return Verification(Presence("no-camera"), None, f"the camera delivered no new frame in time ({message})")
        analysis: FaceAnalysis | None = latest.analysis
        faces_seen = analysis.faces_in_view if analysis is not None else 0
        if probe is None:
            reason = quality_hint(analysis) or fused.reason
            state: PresenceState = "multiple" if faces_seen > 1 else "unclear" if faces_seen else "nobody"
            return Verification(Presence(state), None, reason)
        return self.with_fuller_window(self._checked(probe, faces_seen), deadline)

    def with_fuller_window(self, verification: Verification, deadline: float) -> Verification:
        """A refused probe of fewer frames than the fuser's window is tried again as frames arrive, for at most
        FUSE_MAX_AGE_S (and never past `deadline`, a time.monotonic()): tau holds its FAR for full windows (the
        'fused' calibration rule), where the owner's score is highest, so someone who has just stepped up is not
        turned away on their first frame. Someone already recognised, or refused for another reason, waits for
        nothing."""
        until = min(deadline, time.monotonic() + FUSE_MAX_AGE_S["face"])
        probe = verification.probe
        while (
            probe is not None
            and probe.frames < FUSE_FRAMES["face"]
            and verification.presence.state == "unknown"
            and verification.presence.best_score is not None  # the gate scored it and said no
            and time.monotonic() < until
        ):
            time.sleep(0.02)
            newer = self.verifier.probe().probe
            if newer is not None and newer.frames > probe.frames:
                probe = newer
                verification = self._checked(newer, newer.faces_in_view)
        return verification

    def verify_stronger(self) -> Verification:
        """A stronger probe for a step-up: up to STEP_UP_FRAMES good frames of the last STEP_UP_WINDOW_S fused,
        waiting up to STEP_UP_WAIT_S for them; its newest frame is captured after this call began, as in
        verify_now. With fewer frames by the deadline, whatever the longer window holds is fused."""
        asked_at = time.time()
        if not self.has_camera:
            return self._palm_now(asked_at)
        deadline = time.monotonic() + STEP_UP_WAIT_S
        while True:
            fused = longer_fusion(self.fuser, STEP_UP_FRAMES, STEP_UP_WINDOW_S)
            probe = fused.probe if fused.probe is not None and fused.probe.captured_at >= asked_at else None
            if (probe is not None and probe.frames >= STEP_UP_FRAMES) or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        if probe is None:
            return Verification(Presence("unclear"), None, fused.reason)
        # the most faces any frame in the window showed; the palm scanner's fresh probe beside the face
        return self._with_palm(self._checked(probe, probe.faces_in_view), asked_at)

    def _checked(self, probe: Probe, faces_seen: int) -> Verification:
        """The verification of a fresh probe: calibration, back-off, liveness and face count, then the gate."""
        if self.threshold_problem:
            return Verification(Presence("unknown"), None, self.threshold_problem)
        wait = self.assistant.backoff.wait_s()
        if wait > 0:  # the failures are counted where the gate decides (Assistant.verify), once per question
            return Verification(Presence("unknown"), None, f"Too many failed attempts. Try again in {wait:.0f} s.")
        if self.liveness is not None:
            probe = self.liveness.attach(probe)
            if probe.liveness_blocks:
                assert probe.liveness is not None
                log.warning("query refused personal memory: %s", probe.liveness.reason)
                self.audit.record("presentation-attack-suspected", cues=",".join(probe.liveness.fired))
                return Verification(Presence("unknown"), probe, probe.liveness.reason)
        if faces_seen > 1:
            return Verification(Presence("multiple"), probe)
        return verification_for(self.assistant, probe)

    def recent_probe(self) -> Probe | None:
        """The current fused probe if its newest frame is within the fusion window (for prefilling while typing);
        the palm's on a terminal without a camera."""
        verifier = self.palm.verifier if self.palm is not None and not self.has_camera else self.verifier
        probe = verifier.probe().probe
        if probe is None or time.time() - probe.captured_at > FUSE_MAX_AGE_S[probe.modality]:
            return None
        return probe

    # --- palm scanner -------------------------------------------------------------------------------
    def _palm_deadline(self, asked_at: float) -> float:
        """When a palm probe stops waiting (monotonic): what is left of ui.verify_timeout_s since `asked_at`."""
        left = asked_at + self.config.ui.verify_timeout_s - time.time()
        return time.monotonic() + max(left, PALM_MIN_WAIT_S)

    def _palm_now(self, asked_at: float) -> Verification:
        """The palm scanner's verification on a terminal without a camera."""
        if self.palm is None:
            return Verification(Presence("no-camera"), None, "this terminal has neither a camera nor a palm scanner")
        probe = self.palm.fresh_probe(asked_at, self._palm_deadline(asked_at))
        if probe is None:
            return Verification(Presence("nobody"), None, self.palm.problem() or PLACE_PALM)
        return self._palm_checked(probe)

    def _palm_checked(self, probe: Probe) -> Verification:
        wait = self.assistant.backoff.wait_s()
        if wait > 0:  # as for a face: the failures are counted where the gate decides
            return Verification(Presence("unknown"), None, f"Too many failed attempts. Try again in {wait:.0f} s.")
        return verification_for(self.assistant, probe)

    def _with_palm(self, face: Verification, asked_at: float) -> Verification:
        """The face verification with the scanner's fresh palm probe (kiosk.app.palm.beside_face)."""
        if self.palm is None or hides_memory(face):
            return face
        recognised = face.presence.state == "recognised"  # then a palm is only a second proof: no long wait
        palm = self.palm.fresh_probe(asked_at, self._palm_deadline(asked_at), stop_when_empty=recognised)
        return beside_face(face, palm, self._palm_checked)

    def _palm_only_view(self) -> FrameView:
        """The screen of a terminal without a camera: the scanner's picture, whom its palm shows, and a hint."""
        time.sleep(PALM_VIEW_PERIOD_S)  # the analysis loop asks as often as it may; a scanner view changes slowly
        if self.palm is None:
            return FrameView(None, time.time(), (), Presence("no-camera"), None, "lost", NO_CAMERA)
        latest = self.palm.verifier.latest()
        image = _display_image(latest.frame.image)[0] if latest is not None else None
        probe = self.palm.verifier.probe().probe
        presence = verification_for(self.assistant, probe).presence if probe is not None else Presence("nobody")
        hint = None if probe is not None else self.palm.problem() or PLACE_PALM
        return FrameView(image, time.time(), (), presence, hint, "live", "palm scanner")
