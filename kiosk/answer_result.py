"""What one question at the terminal produced: who was recognised, which memory was used, and the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kiosk.identity.gate import Decision, GateDecision, Identity
from kiosk.memory.scopes import scope_kind
from kiosk.retrieval.results import Path, Retrieval, ScoredNote


@dataclass(frozen=True)
class AnswerResult:
    """Everything one question produced: who was recognised, what memory was used, and the answer."""

    question: str
    identity: Identity | None
    gate: GateDecision
    retrieval: Retrieval
    answer: str
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def decision(self) -> Decision:
        return self.gate.decision

    @property
    def scores(self) -> dict[int, float]:
        return self.gate.scores

    @property
    def path(self) -> Path | None:
        return self.retrieval.path

    @property
    def notes(self) -> list[ScoredNote]:
        return self.retrieval.notes

    @property
    def used_memory(self) -> bool:
        return bool(self.retrieval.notes)

    @property
    def used_personal_memory(self) -> bool:
        """Whether any note in the answer's context was the person's own or their group's (not public)."""
        return any(scope_kind(item.note.scope) != "public" for item in self.retrieval.notes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "decision": self.decision,
            "identity": self.identity.as_dict() if self.identity else None,
            "gate": self.gate.as_dict(),
            "path": self.path,
            "cache_hit": self.retrieval.cache_hit,
            "sensitive": self.retrieval.as_dict()["sensitive"],
            "notes": [item.as_dict() for item in self.notes],
            "used_personal_memory": self.used_personal_memory,
            "below_relevance_floor": self.retrieval.below_relevance_floor,
            "withheld": self.retrieval.withheld_sensitive,
            "step_up": self.retrieval.step_up.as_dict() if self.retrieval.step_up else None,
            "answer": self.answer,
            "timings_ms": {name: round(value, 2) for name, value in self.timings_ms.items()},
        }
