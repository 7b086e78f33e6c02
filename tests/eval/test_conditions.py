"""The LoCoMo replay's retrieval: the clock each question is retrieved at."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import numpy as np

from kiosk.eval.assignments import IdentityBinding
from kiosk.eval.conditions import UserSetup, retrieve_contexts
from kiosk.eval.locomo import Conversation, Question, Session
from kiosk.identity.probe import Probe

LAST_SESSION = datetime(2023, 6, 27, 22, 37, tzinfo=UTC)


class ClockRecordingAssistant:
    """Retrieves nothing; records the clock set when each question is retrieved."""

    def __init__(self) -> None:
        self.clock: Any = None
        self.seen: list[Any] = []

    def retrieve(self, question: str, probe: Probe) -> tuple[Any, Any, dict[str, float]]:
        self.seen.append(self.clock)
        decision = SimpleNamespace(verified_user_id=None, matched_owner_ids=[])
        return decision, SimpleNamespace(notes=[], path=None, below_relevance_floor=False), {}


def _user(sample_id: str, user_id: int) -> UserSetup:
    session = Session(1, "10:37 pm on 27 June, 2023", LAST_SESSION, ())
    binding = IdentityBinding(sample_id, "someone", "a.png", "b.png")
    probe = Probe(modality="face", vector=np.ones(4, dtype=np.float32), model_sha256="c" * 64, captured_at=0.0)
    return UserSetup(Conversation(sample_id, "Ann", "Bob", (session,), ()), user_id, binding, probe)


def test_each_question_is_retrieved_at_its_conversations_utc_time_without_resolving_yearless_days() -> None:
    """LoCoMo has no terminal: its questions' days without a year stay unresolved, so its prompts (and the cached
    answers) stay as they were measured."""
    users = {"conv-1": _user("conv-1", 1), "conv-2": _user("conv-2", 2)}
    question = Question("conv-1", 0, "What is on the 14th?", "camping", 2, ())
    assistant = ClockRecordingAssistant()
    bindings = [setup.binding for setup in users.values()]
    retrieve_contexts(assistant, None, None, ("owner",), [question], users, bindings, set(), 10, lambda *_: None)
    (clock,) = assistant.seen
    assert clock() == datetime(2023, 6, 28, 22, 37, tzinfo=UTC) and clock().tzinfo is UTC
    assert clock.zone is UTC and not clock.resolves_yearless_days
