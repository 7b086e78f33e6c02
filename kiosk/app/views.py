"""What the kiosk screens see of the application: Qt-free views and the `KioskServices` facade they call.

Every method may block (models, database, LLM): the UI calls them from worker threads only.
`kiosk.app.kiosk.KioskApp` implements the protocol on the real core; UI tests use a fake.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from kiosk.identity.gate import Decision, Identity
from kiosk.identity.probe import Probe

# unclear: a face is in view but no frame good enough to verify (turned, blurred, small, dark).
PresenceState = Literal["recognised", "unknown", "multiple", "unclear", "nobody", "no-camera"]
CameraState = Literal["live", "reconnecting", "lost", "ended", "starting"]
Progress = Callable[[float, str], None]
TokenSink = Callable[[str], None]


@dataclass(frozen=True)
class Presence:
    """Who stands in front of the terminal, as far as the camera and the gate can tell.

    `identity` is the gate's verified person when the state is "recognised"; `best_score` the best score of
    someone the gate did not recognise."""

    state: PresenceState
    identity: Identity | None = None
    best_score: float | None = None

    @property
    def user_id(self) -> int | None:
        return self.identity.user_id if self.identity is not None else None

    @property
    def name(self) -> str | None:
        return self.identity.name if self.identity is not None else None

    @property
    def score(self) -> float | None:
        return self.identity.score if self.identity is not None else self.best_score

    @property
    def person_key(self) -> str:
        """Changes exactly when the conversation must be cleared: another person or no longer one person."""
        if self.state == "recognised":
            return f"user:{self.user_id}"
        return self.state


NOBODY = Presence("nobody")


@dataclass(frozen=True)
class FaceBox:
    x: int
    y: int
    w: int
    h: int
    primary: bool = False


@dataclass(frozen=True)
class FrameView:
    """One analysed camera frame: the image (RGB uint8), face boxes in its pixels, and the identity."""

    image: np.ndarray | None
    captured_at: float
    faces: tuple[FaceBox, ...]
    presence: Presence
    hint: str | None = None
    camera: CameraState = "live"
    camera_message: str | None = None


@dataclass(frozen=True)
class Verification:
    """The result of re-verifying the person at the moment an action is sent; acting on it re-runs the gate."""

    presence: Presence
    probe: Probe | None
    reason: str | None = None  # why there is no usable probe, in words for the screen
    second_probe: Probe | None = None  # the palm beside a face probe: the second proof 'face+palm' needs


@dataclass(frozen=True)
class NoteView:
    id: int
    content: str
    timestamp: datetime
    similarity: float | None = None
    sensitivity: str | None = None  # a category (health, finance, ...) when the note is sensitive
    scope: str = "personal"  # personal | group:NAME | public
    archived: bool = False  # faded below the strength floor: listed, not retrieved, restorable


SENSITIVE_WORDS = {
    "health": "health",
    "finance": "money",
    "credentials": "password or code",
    "location": "address or whereabouts",
    "third_party": "someone else's private life",
}


@dataclass(frozen=True)
class AnswerView:
    text: str
    decision: Decision
    presence: Presence
    notes: tuple[NoteView, ...] = ()
    path: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    liveness_reason: str | None = None  # why personal memory was hidden by presentation-attack detection
    withheld_sensitive: int = 0  # sensitive memories among the best matches that needed a stronger check
    step_up: str | None = None  # the asker's own private note would answer this: what to do ("look at the camera…")

    @property
    def sensitive(self) -> bool:
        """The answer was made from at least one sensitive memory."""
        return any(note.sensitivity for note in self.notes)


@dataclass(frozen=True)
class EnrollSample:
    ok: bool
    hint: str | None
    embedding: np.ndarray | None = None  # the face's (None on a terminal without a camera)
    thumbnail: np.ndarray | None = None
    palm: np.ndarray | None = None  # the palm scanner's code taken with it, when the terminal has a scanner


@dataclass(frozen=True)
class ChallengeView:
    """The liveness challenge (enrollment, admin actions): what to ask, and whether it is done."""

    status: Literal["waiting", "passed", "failed", "off"]  # off: liveness checks are disabled in the config
    prompt: str
    message: str = ""


@dataclass(frozen=True)
class UserView:
    id: int
    name: str
    notes: int
    modalities: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupView:
    id: int
    name: str
    members: tuple[tuple[int, str], ...] = ()  # (user id, name)
    notes: int = 0


@dataclass(frozen=True)
class CalibrationView:
    """What the admin screen shows of a calibration run; `payload` is the core result to apply."""

    modality: str
    genuine: np.ndarray
    impostor: np.ndarray
    thresholds: dict[str, float]  # rule -> tau
    far: dict[str, float]  # rule -> FAR at that tau
    frr: dict[str, float]  # rule -> FRR at that tau
    default_rule: str
    counts: dict[str, int]
    eer: float | None = None
    unresolved: dict[str, str] = field(default_factory=dict)  # rule -> why the data cannot resolve it
    payload: object = None
    notes: tuple[str, ...] = ()  # what the data can and cannot show (a site calibration's proposal, in lines)


@dataclass(frozen=True)
class AdminSettings:
    llm_model: str
    llm_choices: tuple[str, ...]
    gate_policy: str
    gate_choices: tuple[str, ...] = ("best-match", "threshold")


class KioskServices(Protocol):
    """The core as the app sees it. All calls may block; none may be made on the GUI thread."""

    def analyse_latest(self) -> FrameView:
        """Analyse the newest camera frame (detect, quality, identity). Called continuously."""
        ...

    def verify_now(self) -> Verification:
        """A fresh probe from frames captured after this call began (never a cached login)."""
        ...

    def answer(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerView: ...

    def prepare(self, partial_question: str) -> None:
        """While the person types: get the answer prompt for the words so far processed (best effort)."""
        ...

    def remember(self, text: str, verification: Verification) -> int | None:
        """Store what the verified user said as their memory; None when nobody was verified."""
        ...

    def enrollment_sample(self) -> EnrollSample: ...

    def start_challenge(self, purpose: str = "enrollment") -> ChallengeView:
        """Begin a random active liveness challenge (blink / head turn) on the live camera.

        `purpose` ("enrollment", or the admin action it guards) goes to the audit log; only an "enrollment"
        challenge lets `enroll` store a template."""
        ...

    def challenge_status(self) -> ChallengeView: ...

    def enroll(self, name: str, samples: Sequence[EnrollSample]) -> UserView:
        """Store the template; refused unless the liveness challenge passed (when liveness checks are on)."""
        ...

    def list_notes(self, verification: Verification) -> list[NoteView]: ...

    def delete_note(self, verification: Verification, note_id: int) -> None: ...

    def restore_note(self, verification: Verification, note_id: int) -> None:
        """Bring one of the verified person's archived (faded) notes back into retrieval."""
        ...

    def mark_note(self, verification: Verification, note_id: int, sensitivity: str | None) -> None:
        """The verified person marks one of their notes sensitive (a category) or not (None); their mark stands."""
        ...

    def forget_me(self, verification: Verification) -> None: ...

    def list_users(self) -> list[UserView]: ...

    def delete_user(self, user_id: int) -> None: ...

    def list_groups(self) -> list[GroupView]: ...

    def add_group(self, name: str) -> GroupView: ...

    def delete_group(self, group_id: int) -> None: ...

    def set_member(self, group_id: int, user_id: int, member: bool) -> None: ...

    def run_calibration(self, modality: str, folder: Path, progress: Progress) -> CalibrationView: ...

    def run_site_calibration(self, modality: str, target_far: float, progress: Progress) -> CalibrationView:
        """Propose tau from the enrolled people's own frames and the shipped impostor cohort."""
        ...

    def apply_calibration(self, result: CalibrationView, rule: str) -> float: ...

    def settings(self) -> AdminSettings: ...

    def apply_settings(self, llm_model: str, gate_policy: str) -> None: ...

    def close(self) -> None: ...


ServicesLoader = Callable[[Progress], KioskServices]
