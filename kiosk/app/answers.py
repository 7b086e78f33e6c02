"""The conversation at the kiosk: answer a question for whoever the gate verifies, prefill while typing,
and keep what a verified person said as their note."""

from __future__ import annotations

import logging

from kiosk.answer_result import AnswerResult
from kiosk.app.live import LiveCamera
from kiosk.app.views import AnswerView, NoteView, Presence, TokenSink, Verification
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.errors import KioskError, LLMError, StoreError
from kiosk.local_time import Zone, local, zone_named

log = logging.getLogger("kiosk.app")


def note_views(result: AnswerResult, zone: Zone = None) -> tuple[NoteView, ...]:
    """The notes an answer used, dated in the terminal's time zone `zone`."""
    return tuple(
        NoteView(
            int(item.note.id or 0),
            item.note.content,
            local(item.note.timestamp, zone),
            item.similarity,
            item.note.sensitivity,
            item.note.scope,
        )
        for item in result.notes
    )


class Answers:
    def __init__(self, config: KioskConfig, assistant: Assistant, live: LiveCamera) -> None:
        self.config = config
        self.assistant = assistant
        self.live = live

    def answer(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerView:
        result = self._answer(question, verification, on_token)
        if result.retrieval.step_up is not None and not result.notes and verification.presence.state == "recognised":
            result = self._stepped_up(question, verification, on_token) or result
        presence = verification.presence
        if result.identity is not None and presence.state == "recognised":
            presence = Presence("recognised", result.identity)
        probe = verification.probe
        step_up = result.retrieval.step_up
        refused = probe.liveness.reason if probe is not None and probe.liveness_blocks and probe.liveness else None
        return AnswerView(
            result.answer,
            result.decision,
            presence,
            note_views(result, zone_named(self.config.ui.time_zone)),
            result.path,
            dict(result.timings_ms),
            refused,
            withheld_sensitive=max(result.retrieval.withheld_sensitive, step_up.withheld if step_up else 0),
            step_up=step_up.action if step_up else None,
        )

    def _answer(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerResult:
        try:
            return self.assistant.answer(
                question, verification.probe, stream=on_token, second_probe=verification.second_probe
            )
        except KioskError:
            raise
        except Exception as exc:  # llama.cpp and HTTP backends raise their own types
            raise LLMError(f"the language model failed ({type(exc).__name__}: {exc})", "try again") from exc

    def _stepped_up(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerResult | None:
        """The asker's own private note needs more proof: ask again with a longer fused probe of the same person
        (the step-up message itself is never streamed, so the answer's tokens start clean). None: no such probe."""
        if self.live is None:  # retrieval-only use without a camera: the step-up message stands
            return None
        stronger = self.live.verify_stronger()
        same_person = stronger.presence.person_key == verification.presence.person_key
        if stronger.probe is None or stronger.presence.state != "recognised" or not same_person:
            return None
        log.info("step-up: asking again with a probe fused from %d frames", stronger.probe.frames)
        return self._answer(question, stronger, on_token)

    def prepare(self, partial_question: str) -> None:
        """Prefill the answer prompt for the words typed so far, for whoever is verified right now."""
        if not self.config.llm.prefill_while_typing:
            return
        probe = self.live.recent_probe()
        if probe is None:
            return
        try:
            self.assistant.prepare(partial_question, probe)
        except KioskError as exc:  # a half-typed question may be invalid: nothing to prepare
            log.debug("no prefill: %s", exc.one_line())

    def remember(self, text: str, verification: Verification) -> int | None:
        """Store what the verified person said; the assistant re-runs the gate for a single author."""
        if verification.presence.state != "recognised" or verification.probe is None:
            return None
        try:
            return self.assistant.remember(text, verification.probe, mode=self.config.ui.remember_construction)
        except KioskError:
            raise
        except Exception as exc:  # apsw errors: locked, full, read-only
            raise StoreError(f"the memory database refused the note ({exc})", "check free disk space") from exc
