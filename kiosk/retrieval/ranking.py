"""The ranking score inside the gated pool: score = alpha * semantic + beta * scope relevance + gamma * strength.

alpha * cosine orders by meaning; beta * relevance(scope) prefers the requester's own notes over their groups'
and the terminal's public notes; gamma * strength prefers memories that are fresh or often used
(kiosk/memory/forgetting.py). With beta = gamma = 0 (or a pool of one scope and no decay weight) the order
is the plain cosine order, the seed's ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from kiosk.config import ForgettingConfig
from kiosk.memory.forgetting import Decay, note_strengths
from kiosk.memory.note import Note
from kiosk.memory.scopes import scope_kind


@dataclass(frozen=True)
class ScopeWeights:
    """alpha, beta and the scope relevances (0..1) of the ranking score: tuning constants, not settings."""

    alpha: float = 1.0
    """Weight of semantic similarity."""
    beta: float = 0.05
    """Weight of scope relevance; small, so it only reorders notes of nearly equal similarity."""
    personal_relevance: float = 1.0
    group_relevance: float = 0.5
    public_relevance: float = 0.0
    """Public notes are visible to everyone: no preference for them."""


SCOPE_WEIGHTS = ScopeWeights()


@dataclass(frozen=True)
class Ranking:
    alpha: float = 1.0
    beta: float = 0.0
    relevance: Mapping[str, float] = field(default_factory=lambda: {"personal": 1.0, "group": 0.5, "public": 0.0})
    gamma: float = 0.0
    decay: Decay | None = None
    now: datetime | None = None

    @classmethod
    def from_config(cls, scopes: ScopeWeights, forgetting: ForgettingConfig, now: datetime | None) -> Ranking:
        return cls(
            alpha=scopes.alpha,
            beta=scopes.beta,
            relevance={
                "personal": scopes.personal_relevance,
                "group": scopes.group_relevance,
                "public": scopes.public_relevance,
            },
            gamma=forgetting.weight,
            decay=Decay.from_config(forgetting),
            now=now,
        )

    @property
    def uses_strength(self) -> bool:
        return self.gamma > 0 and self.decay is not None and self.now is not None

    def is_plain_cosine(self, scopes_in_pool: Sequence[str]) -> bool:
        """True when this ranking orders exactly like cosine similarity for a pool of these scope kinds."""
        if self.alpha <= 0 or self.uses_strength:
            return False
        return len({self.relevance.get(kind, 0.0) for kind in scopes_in_pool}) <= 1 or self.beta == 0

    @property
    def max_bias(self) -> float:
        return self.beta * max(self.relevance.values(), default=0.0) + (self.gamma if self.uses_strength else 0.0)

    def scope_bias(self, kinds: Sequence[str]) -> np.ndarray:
        return np.array([self.beta * self.relevance.get(kind, 0.0) for kind in kinds], dtype=np.float64)

    def note_bias(self, notes: Sequence[Note], owner_scopes: Mapping[int, str] | None = None) -> np.ndarray:
        """beta * relevance + gamma * strength of each note (what is added to alpha * cosine).

        The scope is the one the gate's pool gave the note's owner (`owner_scopes`), else the note's own.
        """
        scopes = owner_scopes or {}
        bias = self.scope_bias([scopes.get(note.owner_id) or scope_kind(note.scope) for note in notes])
        if self.uses_strength and notes:
            assert self.decay is not None and self.now is not None
            bias = bias + self.gamma * note_strengths(notes, self.now, self.decay)
        return bias

    def scores(
        self, similarities: np.ndarray, notes: Sequence[Note], owner_scopes: Mapping[int, str] | None = None
    ) -> np.ndarray:
        return self.alpha * np.asarray(similarities, dtype=np.float64) + self.note_bias(notes, owner_scopes)


PLAIN_COSINE = Ranking()
