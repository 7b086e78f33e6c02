"""What retrieval hands to the prompt builder, the CLI and the evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kiosk.memory.note import Note

if TYPE_CHECKING:
    from kiosk.retrieval.sensitive import Clearance
    from kiosk.retrieval.step_up import StepUp

Path = Literal["familiarity", "lexical"]


@dataclass(frozen=True)
class ScoredNote:
    """A retrieved note with its cosine similarity to the question (and the score it was ranked by)."""

    note: Note
    similarity: float
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.note.id,
            "owner_id": self.note.owner_id,
            "scope": self.note.scope,
            "content": self.note.content,
            "source_ref": self.note.source_ref,
            "sensitivity": self.note.sensitivity,
            "similarity": round(self.similarity, 6),
            "score": round(self.score, 6),
            "timestamp": self.note.timestamp.isoformat(),
        }


@dataclass(frozen=True)
class Retrieval:
    """Notes chosen for the context (chronological), the path that chose them, and how long it took."""

    path: Path | None
    notes: list[ScoredNote]
    cache_hit: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)
    clearance: Clearance | None = None
    """Set by the assistant: whose sensitive notes were allowed, and how many of the top K were withheld."""
    below_relevance_floor: bool = False
    """Set by the relevance floor: notes were found, but none was about the question, so none is used."""
    step_up: StepUp | None = None
    """Set by the assistant: the asker's own withheld sensitive notes that would have been used (step_up.py)."""

    @property
    def withheld_sensitive(self) -> int:
        return self.clearance.withheld_in_top_k if self.clearance is not None else 0

    @property
    def note_ids(self) -> list[int]:
        return [int(item.note.id) for item in self.notes if item.note.id is not None]

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "notes": [item.as_dict() for item in self.notes],
            "cache_hit": self.cache_hit,
            "timings_ms": dict(self.timings_ms),
            "sensitive": self.clearance.as_dict() if self.clearance is not None else None,
            "below_relevance_floor": self.below_relevance_floor,
        }
