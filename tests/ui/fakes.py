"""A scripted KioskServices for UI tests: the scene in front of the camera and every failure are set by the test."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from kiosk.app.views import (
    AdminSettings,
    AnswerView,
    CalibrationView,
    ChallengeView,
    EnrollSample,
    FaceBox,
    FrameView,
    GroupView,
    NoteView,
    Presence,
    Progress,
    TokenSink,
    UserView,
    Verification,
)
from kiosk.errors import CalibrationError, LLMError, StoreError
from kiosk.identity.gate import Identity
from kiosk.identity.probe import Probe

ADA = Presence("recognised", Identity(1, "Ada", 0.83, "face"))
BOB = Presence("recognised", Identity(2, "Bob", 0.79, "face"))
UNKNOWN = Presence("unknown")
TWO_PEOPLE = Presence("multiple")


def scene_image(faces: int = 1) -> np.ndarray:
    """A soft gradient with skin-toned ellipses where the faces are: enough to see the preview work."""
    height, width = 360, 640
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack([30 + x * 40 // width, 40 + y * 50 // height, 70 + 0 * x], axis=2).astype(np.uint8)
    for index in range(faces):
        cx, cy = 320 + (index - (faces - 1) / 2) * 200, 170
        mask = ((x - cx) / 60) ** 2 + ((y - cy) / 80) ** 2 <= 1
        image[mask] = (205, 160, 130)
    return image


class FakeServices:
    def __init__(self) -> None:
        self.presence = ADA
        self.camera = "live"
        self.users = {1: "Ada", 2: "Bob"}
        self.notes: dict[int, list[NoteView]] = {
            1: [
                NoteView(1, "My sister Clara lives in Lisbon.", datetime(2026, 5, 1, tzinfo=UTC), 0.71),
                NoteView(2, "Clara's birthday is on 3 March.", datetime(2026, 6, 2, tzinfo=UTC), 0.64),
            ],
            2: [NoteView(3, "Bob keeps bees.", datetime(2026, 7, 3, tzinfo=UTC), 0.5)],
        }
        self.tokens = ["Your ", "sister ", "Clara ", "lives ", "in ", "Lisbon."]
        self.withheld_sensitive = 0
        self.token_delay_s = 0.0
        self.prepared: list[str] = []  # partial questions the UI asked to prepare while typing
        self.llm_error: str | None = None
        self.remember_error: Exception | None = None
        self.disconnect_when_verifying = False
        self.sample_script: list[EnrollSample] = []
        self.challenge_script: list[str] = []  # statuses challenge_status returns in turn, then "passed"
        self.challenge_polls = 0
        self.challenge_purposes: list[str] = []  # what each started challenge was for (enrollment, unlock, ...)
        self.challenge_off = False  # the terminal cannot run the challenge (no Face Mesh)
        self.calibration_error: str | None = None
        self.settings_state = AdminSettings(
            "qwen2.5-coder-0.5b-instruct", ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"), "best-match"
        )
        self.remembered: list[tuple[str, int]] = []
        self.marked: list[tuple[int, str | None]] = []
        self.groups: dict[int, tuple[str, set[int]]] = {50: ("family", {1})}
        self.public_notes: list[NoteView] = []
        self.verifications = 0
        self.closed = False
        self._next_id = 100
        self._lock = threading.Lock()

    # --- camera -------------------------------------------------------------------------------------
    def _faces(self) -> tuple[FaceBox, ...]:
        count = {"multiple": 2, "nobody": 0, "no-camera": 0}.get(self.presence.state, 1)
        return tuple(
            FaceBox(int(260 + (i - (count - 1) / 2) * 200), 90, 120, 160, primary=i == 0) for i in range(count)
        )

    def analyse_latest(self) -> FrameView:
        time.sleep(0.03)
        if self.camera != "live":
            return FrameView(None, time.time(), (), Presence("no-camera"), camera="reconnecting")
        faces = self._faces()
        return FrameView(scene_image(len(faces)), time.time(), faces, self.presence)

    def verify_now(self) -> Verification:
        self.verifications += 1
        if self.disconnect_when_verifying:
            self.camera = "reconnecting"
        if self.camera != "live":
            return Verification(Presence("no-camera"), None, "the camera stopped delivering frames")
        presence = self.presence
        faces = len(self._faces())
        if presence.state in ("nobody",):
            return Verification(presence, None, "no face in view")
        probe = Probe("face", np.ones(4, np.float32) / 2, "fake-sha", time.time(), 3, faces)
        return Verification(presence, probe)

    # --- conversation -------------------------------------------------------------------------------
    def answer(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerView:
        if self.llm_error:
            raise LLMError(self.llm_error, "check the model")
        presence = verification.presence
        notes: tuple[NoteView, ...] = ()
        decision = "fallback"
        if verification.probe is not None and verification.probe.faces_in_view > 1:
            decision = "hidden-multiple-faces"
        elif presence.state == "recognised" and presence.user_id is not None:
            notes = tuple(self.notes.get(presence.user_id, []))
            decision = "owner" if notes else "fallback"
        notes += tuple(self.public_notes)  # public notes need no recognition
        tokens = ["I ", "don't ", "know ", "that ", "yet."]
        if decision == "owner":
            tokens = self.tokens if presence.user_id == 1 else [f"{w} " for w in notes[0].content.split()]
        for token in tokens:
            if self.token_delay_s:
                time.sleep(self.token_delay_s)
            on_token(token)
        path = "familiarity" if notes else None
        return AnswerView(
            "".join(tokens),
            decision,
            presence,
            notes,
            path,
            withheld_sensitive=self.withheld_sensitive,  # type: ignore[arg-type]
        )

    def prepare(self, partial_question: str) -> None:
        self.prepared.append(partial_question)

    def remember(self, text: str, verification: Verification) -> int | None:
        if self.remember_error is not None:
            raise self.remember_error
        presence = verification.presence
        if presence.state != "recognised" or presence.user_id is None:
            return None
        with self._lock:
            self._next_id += 1
            self.remembered.append((text, presence.user_id))
            return self._next_id

    # --- enrollment and own memories ----------------------------------------------------------------
    def enrollment_sample(self) -> EnrollSample:
        if self.sample_script:
            return self.sample_script.pop(0)
        return EnrollSample(True, None, np.ones(4, np.float32) / 2)

    def start_challenge(self, purpose: str = "enrollment") -> ChallengeView:
        self.challenge_purposes.append(purpose)
        if self.challenge_off:
            return ChallengeView("off", "", "liveness checks are off (pad.enabled)")
        return ChallengeView("waiting", "Please blink once")

    def challenge_status(self) -> ChallengeView:
        self.challenge_polls += 1
        status = self.challenge_script.pop(0) if self.challenge_script else "passed"
        reason = {"passed": "blink seen", "failed": "time is up (6 s): the asked movement was not seen"}.get(status, "")
        return ChallengeView(status, "Please blink once", reason)  # type: ignore[arg-type]

    def enroll(self, name: str, samples: Sequence[EnrollSample]) -> UserView:
        if len(samples) < 3:
            raise StoreError("too few good frames", "capture again")
        with self._lock:
            user_id = max(self.users) + 1
            self.users[user_id] = name
        return UserView(user_id, name, 0, ("face",))

    def _owner(self, verification: Verification) -> int:
        if verification.presence.state != "recognised" or verification.presence.user_id is None:
            raise StoreError("nobody verified", "stand in front of the camera")
        return verification.presence.user_id

    def list_notes(self, verification: Verification) -> list[NoteView]:
        return list(self.notes.get(self._owner(verification), []))

    def delete_note(self, verification: Verification, note_id: int) -> None:
        owner = self._owner(verification)
        self.notes[owner] = [n for n in self.notes.get(owner, []) if n.id != note_id]

    def restore_note(self, verification: Verification, note_id: int) -> None:
        owner = self._owner(verification)
        self.notes[owner] = [replace(n, archived=False) if n.id == note_id else n for n in self.notes[owner]]

    def mark_note(self, verification: Verification, note_id: int, sensitivity: str | None) -> None:
        owner = self._owner(verification)
        self.marked.append((note_id, sensitivity))
        self.notes[owner] = [replace(n, sensitivity=sensitivity) if n.id == note_id else n for n in self.notes[owner]]

    def forget_me(self, verification: Verification) -> None:
        owner = self._owner(verification)
        self.notes.pop(owner, None)
        self.users.pop(owner, None)

    # --- admin --------------------------------------------------------------------------------------
    def list_users(self) -> list[UserView]:
        return [UserView(uid, name, len(self.notes.get(uid, [])), ("face",)) for uid, name in self.users.items()]

    def delete_user(self, user_id: int) -> None:
        self.users.pop(user_id, None)
        self.notes.pop(user_id, None)

    def list_groups(self) -> list[GroupView]:
        return [
            GroupView(gid, name, tuple((uid, self.users[uid]) for uid in sorted(members) if uid in self.users))
            for gid, (name, members) in sorted(self.groups.items())
        ]

    def add_group(self, name: str) -> GroupView:
        if any(existing == name for existing, _ in self.groups.values()):
            raise StoreError(f"group '{name}' already exists", "pick another name")
        with self._lock:
            group_id = max(self.groups, default=50) + 1
            self.groups[group_id] = (name, set())
        return GroupView(group_id, name)

    def delete_group(self, group_id: int) -> None:
        self.groups.pop(group_id, None)

    def set_member(self, group_id: int, user_id: int, member: bool) -> None:
        members = self.groups[group_id][1]
        if member:
            members.add(user_id)
        elif user_id in members:
            members.remove(user_id)
        else:
            raise StoreError(f"user {user_id} is not a member of group {group_id}", "see the groups list")

    def run_calibration(self, modality: str, folder: Path, progress: Progress) -> CalibrationView:
        for step in range(5):
            time.sleep(0.01)
            progress(step / 5, f"embedding images {step * 20} of 100")
        if self.calibration_error:
            raise CalibrationError(self.calibration_error, "use a folder with at least two identities")
        rng = np.random.default_rng(0)
        genuine, impostor = rng.normal(0.7, 0.1, 300), rng.normal(0.15, 0.1, 3000)
        thresholds = {"tau_d": 0.43, "eer": 0.42, "far": 0.52, "strict": 0.52, "fused": 0.6}
        far = {"tau_d": 0.0021, "eer": 0.003, "far": 0.0001, "strict": 0.0001, "fused": 0.0001}
        frr = {"tau_d": 0.004, "eer": 0.003, "far": 0.02, "strict": 0.02, "fused": 0.015}
        counts = {"genuine": 300, "impostor": 3000}
        return CalibrationView(modality, genuine, impostor, thresholds, far, frr, "fused", counts, 0.003)

    def run_site_calibration(self, modality: str, target_far: float, progress: Progress) -> CalibrationView:
        progress(0.5, "scoring the enrolled frames")
        view = self.run_calibration(modality, Path("."), progress)
        self.site_target = target_far
        notes = ("proposed tau 0.5500 for target FAR 0.001", "too few impostor trials (rule of three)")
        return replace(view, default_rule="far", notes=notes)

    def apply_calibration(self, result: CalibrationView, rule: str) -> float:
        self.applied = (result.modality, rule)
        return result.thresholds[rule]

    def settings(self) -> AdminSettings:
        return self.settings_state

    def apply_settings(self, llm_model: str, gate_policy: str) -> None:
        self.settings_state = AdminSettings(llm_model, self.settings_state.llm_choices, gate_policy)

    def close(self) -> None:
        self.closed = True
