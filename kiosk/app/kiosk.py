"""The kiosk application object: the `KioskServices` the screens call, composed of its parts.

Each part does one job (live camera and presence, answers, enrolment, own memories, admin); this object only
routes the screens' calls to them and closes everything at the end. `kiosk.app.build.load_kiosk` builds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kiosk.app.admin import Admin
from kiosk.app.answers import Answers
from kiosk.app.enrichment import IdleEnrichment
from kiosk.app.enrolment import Enrolment
from kiosk.app.live import LiveCamera
from kiosk.app.memories import OwnMemories
from kiosk.app.views import (
    AdminSettings,
    AnswerView,
    CalibrationView,
    ChallengeView,
    EnrollSample,
    FrameView,
    GroupView,
    NoteView,
    Progress,
    TokenSink,
    UserView,
    Verification,
)
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.identity.pad import ChallengeSession
from kiosk.llm.locked import LockedLLM, close_llm
from kiosk.security.audit import AuditLog


class KioskApp:
    def __init__(
        self,
        config: KioskConfig,
        assistant: Assistant,
        llm: LockedLLM,
        live: LiveCamera,
        challenge: ChallengeSession,
        audit: AuditLog,
        *,
        owns_llm: bool,
    ) -> None:
        self.config = config
        self.assistant = assistant
        self.store = assistant.store
        self.llm = llm
        self.live = live
        self.audit = audit
        self.answers = Answers(config, assistant, live)
        self.enrolment = Enrolment(self.store, live, challenge, audit)
        self.memories = OwnMemories(assistant, audit, on_forgotten=live.forget_templates)
        self.admin = Admin(config, assistant, live, llm, owns_llm=owns_llm)
        self.enrichment: IdleEnrichment | None = None
        """Set by load_kiosk when ui.enrich_notes_when_idle is on: told of every use so it waits."""

    @property
    def thresholds(self) -> dict[str, float]:
        """tau per modality, as the gate uses it now (an applied calibration changes it)."""
        return self.assistant.thresholds if self.assistant.thresholds is not None else {}

    # --- camera and presence ------------------------------------------------------------------------
    def analyse_latest(self) -> FrameView:
        return self.live.analyse_latest()

    def verify_now(self) -> Verification:
        return self.live.verify_now()

    # --- conversation -------------------------------------------------------------------------------
    def answer(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerView:
        if self.enrichment is not None:
            self.enrichment.touch()
        return self.answers.answer(question, verification, on_token)

    def prepare(self, partial_question: str) -> None:
        if self.enrichment is not None:
            self.enrichment.touch()
        self.answers.prepare(partial_question)

    def remember(self, text: str, verification: Verification) -> int | None:
        note_id = self.answers.remember(text, verification)
        if self.enrichment is not None:
            self.enrichment.remembered(note_id)
        return note_id

    # --- enrolment ----------------------------------------------------------------------------------
    def enrollment_sample(self) -> EnrollSample:
        return self.enrolment.enrollment_sample()

    def start_challenge(self, purpose: str = "enrollment") -> ChallengeView:
        return self.enrolment.start_challenge(purpose)

    def challenge_status(self) -> ChallengeView:
        return self.enrolment.challenge_status()

    def enroll(self, name: str, samples: Sequence[EnrollSample]) -> UserView:
        return self.enrolment.enroll(name, samples)

    # --- own memories -------------------------------------------------------------------------------
    def list_notes(self, verification: Verification) -> list[NoteView]:
        return self.memories.list_notes(verification)

    def restore_note(self, verification: Verification, note_id: int) -> None:
        self.memories.restore_note(verification, note_id)

    def delete_note(self, verification: Verification, note_id: int) -> None:
        self.memories.delete_note(verification, note_id)

    def mark_note(self, verification: Verification, note_id: int, sensitivity: str | None) -> None:
        self.memories.mark_note(verification, note_id, sensitivity)

    def forget_me(self, verification: Verification) -> None:
        self.memories.forget_me(verification)

    # --- admin --------------------------------------------------------------------------------------
    def list_users(self) -> list[UserView]:
        return self.admin.list_users()

    def delete_user(self, user_id: int) -> None:
        self.admin.delete_user(user_id)

    def list_groups(self) -> list[GroupView]:
        return self.admin.list_groups()

    def add_group(self, name: str) -> GroupView:
        return self.admin.add_group(name)

    def delete_group(self, group_id: int) -> None:
        self.admin.delete_group(group_id)

    def set_member(self, group_id: int, user_id: int, member: bool) -> None:
        self.admin.set_member(group_id, user_id, member)

    def run_calibration(self, modality: str, folder: Path, progress: Progress) -> CalibrationView:
        return self.admin.run_calibration(modality, folder, progress)

    def run_site_calibration(self, modality: str, target_far: float, progress: Progress) -> CalibrationView:
        return self.admin.run_site_calibration(modality, target_far, progress)

    def apply_calibration(self, result: CalibrationView, rule: str) -> float:
        return self.admin.apply_calibration(result, rule)

    def settings(self) -> AdminSettings:
        return self.admin.settings()

    def apply_settings(self, llm_model: str, gate_policy: str) -> None:
        self.admin.apply_settings(llm_model, gate_policy)

    def close(self) -> None:
        if self.enrichment is not None:
            self.enrichment.stop()
        self.live.stop()
        self.store.close()
        if self.admin.owns_llm:
            close_llm(self.llm.inner)
