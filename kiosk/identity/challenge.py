"""Active liveness challenge for enrollment and admin actions: "blink" or "turn your head left/right".

Driven by Face Mesh measurements of successive frames (`eye_aspect_ratio`, `head_yaw` in kiosk/identity/facemesh.py):
feed one `ChallengeSample` per analysed frame and read the state. A printed photo cannot blink, and turning a flat
picture does not move the nose between the cheeks the way turning a head does; a replayed video would have to show
the asked action (kind and direction chosen at random) within the time limit.

Pure logic, no camera and no model here, so the rules are tested with synthetic landmark sequences.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

ChallengeKind = Literal["blink", "turn-left", "turn-right"]
ChallengeStatus = Literal["waiting", "passed", "failed"]
BASELINE_FRAMES = 3  # open-eye frames needed before a blink can count
MAX_BLINK_S = 1.0  # eyes shut longer than this is not a blink (someone closing their eyes, a photo of shut eyes)


@dataclass(frozen=True)
class ChallengeTuning:
    """Time limit and Face Mesh thresholds of the active challenge."""

    timeout_s: float = 6.0  # time allowed to complete the challenge
    blink_closed_ratio: float = 0.65  # eye openness below this fraction of the open-eye baseline is a closed eye
    blink_open_ratio: float = 0.85  # eye openness back above this fraction of the baseline ends the blink
    turn_min_yaw: float = 0.35  # head yaw to reach (nose between the cheeks, 0 frontal .. 1 profile)
    turn_centre_yaw: float = 0.15  # yaw within which the head counts as facing the camera again


CHALLENGE = ChallengeTuning()


@dataclass(frozen=True)
class ChallengeSample:
    timestamp: float
    eye_openness: float | None  # eye aspect ratio of the requester's face; None when no face / no mesh
    yaw: float | None  # signed head yaw, -1 .. 1 (negative: nose towards the image-left side)


@dataclass(frozen=True)
class ChallengeState:
    status: ChallengeStatus
    prompt: str  # what to show the person
    message: str  # why it passed or failed (or what is still missing)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def choose_kind(policy: str, rng: random.Random | None = None) -> ChallengeKind:
    """A random challenge allowed by `pad.challenge` (blink, turn, either)."""
    rng = rng or random.SystemRandom()
    kinds: list[ChallengeKind]
    if policy == "blink":
        kinds = ["blink"]
    elif policy == "turn":
        kinds = ["turn-left", "turn-right"]
    else:
        kinds = ["blink", "turn-left", "turn-right"]
    return rng.choice(kinds)


PROMPTS: dict[ChallengeKind, str] = {
    "blink": "Please blink once",
    "turn-left": "Please turn your head to your left, then look back",
    "turn-right": "Please turn your head to your right, then look back",
}


class ActiveChallenge:
    """One challenge: feed samples in time order until `state().status` is not "waiting"."""

    def __init__(self, kind: ChallengeKind, started_at: float, tuning: ChallengeTuning = CHALLENGE) -> None:
        self.kind: ChallengeKind = kind
        self.tuning = tuning
        self.started_at = started_at
        self._state = ChallengeState("waiting", PROMPTS[kind], "waiting for the face")
        self._open: list[float] = []  # eye openness of frames before the blink, for the baseline
        self._closed_since: float | None = None
        self._faced = False  # a turn counts only after the face was seen frontal (a photo of a turned head is not one)
        self._turned = False
        self._faces = 0

    def state(self) -> ChallengeState:
        return self._state

    def feed(self, sample: ChallengeSample) -> ChallengeState:
        if self._state.status != "waiting":
            return self._state
        if sample.timestamp - self.started_at > self.tuning.timeout_s:
            missing = "no face was seen" if self._faces == 0 else "the asked movement was not seen"
            return self._finish("failed", f"time is up ({self.tuning.timeout_s:.0f} s): {missing}")
        if self.kind == "blink":
            if sample.eye_openness is None:
                self._closed_since = None  # the face left the view: eyes "closed" before that are no blink
            elif sample.yaw is not None and abs(sample.yaw) > self.tuning.turn_min_yaw:
                # A turned face's eye aspect ratio is not comparable with the frontal baseline (a profile's eye
                # looks short and open): such frames neither build the baseline nor open or close a blink.
                self._faces += 1
                self._closed_since = None
            else:
                self._faces += 1
                self._blink(sample.timestamp, sample.eye_openness)
        elif sample.yaw is not None:
            self._faces += 1
            self._turn(sample.yaw)
        return self._state

    def _finish(self, status: ChallengeStatus, message: str) -> ChallengeState:
        self._state = ChallengeState(status, PROMPTS[self.kind], message)
        return self._state

    def _blink(self, timestamp: float, openness: float) -> None:
        if len(self._open) < BASELINE_FRAMES:
            self._open.append(openness)
            self._state = ChallengeState("waiting", PROMPTS[self.kind], "measuring open eyes")
            return
        baseline = sorted(self._open)[len(self._open) // 2]
        if baseline <= 0:
            return
        ratio = openness / baseline
        if self._closed_since is None:
            if ratio < self.tuning.blink_closed_ratio:
                self._closed_since = timestamp
            else:
                self._open = [*self._open[-9:], openness]  # a slowly changing baseline (lighting, distance)
            return
        if ratio >= self.tuning.blink_open_ratio:
            shut_for = timestamp - self._closed_since
            if shut_for <= MAX_BLINK_S:
                self._finish("passed", f"blink seen (eyes shut {shut_for:.2f} s)")
            else:
                self._closed_since = None
                self._state = ChallengeState(
                    "waiting", PROMPTS[self.kind], f"eyes were shut {shut_for:.1f} s: a blink is quicker"
                )

    def _turn(self, yaw: float) -> None:
        # The image is not mirrored: a person turning to their left moves their nose to the image right (yaw > 0).
        wanted = 1.0 if self.kind == "turn-left" else -1.0
        if not self._faced:
            if abs(yaw) <= self.tuning.turn_centre_yaw:
                self._faced = True
                self._state = ChallengeState("waiting", PROMPTS[self.kind], "face seen: now turn")
            return
        if not self._turned:
            if yaw * wanted >= self.tuning.turn_min_yaw:
                self._turned = True
                self._state = ChallengeState("waiting", PROMPTS[self.kind], "turn seen: now look back at the camera")
            return
        if abs(yaw) <= self.tuning.turn_centre_yaw:
            self._finish("passed", "head turn and return seen")
