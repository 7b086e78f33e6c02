"""The palm scanner beside the camera: its frames encoded on their own thread, fused into fresh palm probes.

As with the camera (kiosk.app.live), one worker thread (a ContinuousVerifier) encodes the scanner's frames, so
the palm encoder is only ever used from that thread. A question takes the fused probe whose newest frame was
captured after it was sent (never a cached palm); the enrolment wizard takes the palm code of a newly encoded
frame. Whom a probe verifies is decided by the gate under the assistant's rule, as for a face.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from kiosk.app.terminal_kind import has_scanner
from kiosk.app.views import Verification
from kiosk.errors import CalibrationError
from kiosk.identity.palm_capture import PalmCapture, open_palm_capture
from kiosk.identity.probe import Probe
from kiosk.identity.sources import SourceState
from kiosk.identity.verify import ContinuousVerifier, ProbeFuser

if TYPE_CHECKING:
    from kiosk.config import KioskConfig
    from kiosk.models import ModelStore

PALM_FPS = 10.0  # scanner frames encoded per second at most: leaves CPU for the camera and the LLM
PLACE_PALM = "Hold your open palm over the scanner"
SCANNER_DOWN = (SourceState.RECONNECTING, SourceState.FAILED, SourceState.ENDED)

log = logging.getLogger("kiosk.app")


@dataclass(frozen=True)
class PalmReading:
    """One scanner frame's palm code; the fuser counts the hand like one face in view."""

    embedding: np.ndarray
    faces_in_view: int = 1


class LivePalm:
    """The palm scanner and its encoding loop; fresh probes and enrolment samples on request."""

    def __init__(self, capture: PalmCapture) -> None:
        self.capture = capture
        self.fuser = ProbeFuser.for_modality("palm", capture.embedder.model_sha256)
        self.verifier = ContinuousVerifier(capture.source, self._paced_read, self.fuser)
        self._period_s = 1.0 / PALM_FPS
        self._last_read = 0.0

    @property
    def model_sha256(self) -> str:
        return self.capture.embedder.model_sha256

    def start(self) -> None:
        self.capture.source.start()
        self.verifier.start()

    def stop(self) -> None:
        self.verifier.stop(stop_source=True)

    def _paced_read(self, image: np.ndarray) -> PalmReading:
        wait = self._last_read + self._period_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_read = time.monotonic()
        return PalmReading(self.capture.embed_frame(image))

    def problem(self) -> str | None:
        """Why the scanner gives no palm now, in a few words; None while it delivers palms."""
        status = self.capture.source.status()
        if status.state in SCANNER_DOWN:
            return f"palm scanner unavailable ({status.message})"
        latest = self.verifier.latest()
        if latest is not None and latest.error is not None:
            return f"no usable palm: {latest.error}"
        return None

    def fresh_probe(self, asked_at: float, deadline: float, *, stop_when_empty: bool = False) -> Probe | None:
        """The fused palm probe whose newest frame was captured at or after `asked_at` (wall clock), waiting until
        `deadline` (monotonic) for it. `stop_when_empty`: give up at the first such frame without a usable palm
        (nobody holds a palm over the scanner, so a face-verified question does not wait for one)."""
        while True:
            fused = self.verifier.probe()
            if fused.probe is not None and fused.probe.captured_at >= asked_at:
                return fused.probe
            latest = self.verifier.latest()
            empty_now = latest is not None and latest.frame.timestamp >= asked_at and latest.analysis is None
            down = self.capture.source.state in SCANNER_DOWN
            if (stop_when_empty and empty_now) or down or time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def holds_palm(self) -> bool:
        """Whether the scanner's newest encoded frame shows a usable palm."""
        latest = self.verifier.latest()
        return latest is not None and isinstance(latest.analysis, PalmReading)

    def next_sample(self, wait_s: float) -> tuple[np.ndarray | None, str | None]:
        """The palm code of a frame encoded after this call, or None and what the person should do."""
        latest = self.verifier.latest()
        previous = latest.frame.index if latest is not None else -1
        deadline = time.monotonic() + wait_s
        while latest is None or latest.frame.index == previous:
            if time.monotonic() >= deadline:
                return None, self.problem() or PLACE_PALM
            time.sleep(0.01)
            latest = self.verifier.latest()
        if not isinstance(latest.analysis, PalmReading):
            return None, f"{PLACE_PALM} ({latest.error})" if latest.error else PLACE_PALM
        return latest.analysis.embedding.copy(), None


def hides_memory(face: Verification) -> bool:
    """Several people in view or a suspected presentation attack: personal memory stays hidden, whatever palm
    is on the scanner."""
    attack = face.probe is not None and face.probe.liveness_blocks
    return face.presence.state == "multiple" or attack


def beside_face(face: Verification, palm: Probe | None, verify_palm: Callable[[Probe], Verification]) -> Verification:
    """What a question sent now is verified by, given the face's verification and the scanner's fresh probe.

    A verified face keeps the palm beside it as the second proof (sensitive notes under 'face+palm'); when no
    face is verified, the palm stands in if it verifies someone, or when there was no face probe at all (so an
    unknown palm gets the plain "not recognised" fallback). Callers check `hides_memory` first."""
    if face.presence.state == "recognised":
        return replace(face, second_probe=palm)
    if palm is None:
        return face
    by_palm = verify_palm(palm)
    return by_palm if by_palm.presence.state == "recognised" or face.probe is None else face


def load_live_palm(config: KioskConfig, models: ModelStore | None = None) -> LivePalm | None:
    """The configured palm scanner (`capture.palm_source`) with the palm encoder, unstarted; None without one."""
    from kiosk.identity.palm import load_palm_embedder

    if not has_scanner(config.capture):
        return None
    capture = open_palm_capture(config, load_palm_embedder(config, models))
    return LivePalm(capture) if capture is not None else None


def palm_thresholds(config: KioskConfig, palm: LivePalm | None) -> dict[str, float]:
    """The palm tau of the active calibration for the scanner's encoder; none (nobody verified by palm) without
    a usable calibration, which `kiosk doctor` reports."""
    from kiosk.calibration.active import active_threshold

    if palm is None:
        return {}
    try:
        return {"palm": active_threshold(config, "palm", palm.model_sha256)}
    except CalibrationError as exc:
        log.warning("no usable palm calibration: %s", exc.one_line())
        return {}
