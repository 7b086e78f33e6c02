"""Step-up, not silence: when the verified person's own sensitive note would have answered the question but the
probe was not strong enough for it, say so and say what would clear it.

A withheld sensitive note counts only if it would have been among the notes given to the LLM: the same retrieval
run once more on the same pool WITH the withheld notes, through the same relevance floor. Only notes of the
verified person, or of a group they belong to, count: a stranger or anyone else gets no step-up, and nothing of
a withheld note (its text, its count) ever leaves this module but the number that would have been used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from kiosk.config import KioskConfig
from kiosk.identity.gate import GateDecision
from kiosk.memory.note import Group
from kiosk.retrieval.results import Retrieval
from kiosk.retrieval.sensitive import Clearance


@dataclass(frozen=True)
class StepUp:
    """The asker's own withheld sensitive notes that would have been used, and what would clear them."""

    withheld: int
    needs: str
    """'score >= 0.653' (verification 'threshold') or 'face+palm'."""
    modality: str | None
    score: float | None
    palm: bool
    """Whether a palm on the scanner can help (a palm scanner is configured, or face+palm is required)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "withheld": self.withheld,
            "needs": self.needs,
            "score": None if self.score is None else round(self.score, 4),
            "modality": self.modality,
        }

    @property
    def action(self) -> str:
        """What the person can do to clear it, as one clause."""
        if self.needs == "face+palm":
            return "look at the camera and put your palm on the scanner, then ask again"
        if self.modality == "palm":
            return "keep your palm on the scanner for a moment and ask again"
        if self.palm:
            return "look at the camera for a moment (or put your palm on the scanner) and ask again"
        return "look at the camera for a moment and ask again"

    @property
    def message(self) -> str:
        """The answer shown instead of "I don't know" (no word of what the note says)."""
        return f"I have a private note about this. {self.action[0].upper()}{self.action[1:]}."


def step_up(
    decision: GateDecision,
    clearance: Clearance,
    withheld: Set[int],
    scopes: Mapping[int, str],
    groups_of: Callable[[int], Sequence[Group]],
    config: KioskConfig,
    retrieve_all: Callable[[], Retrieval],
) -> StepUp | None:
    """The step-up for this query, or None.

    `withheld`: the sensitive note ids left out of this query; `scopes`: the query's pool (owner -> scope kind);
    `retrieve_all`: the same retrieval on the same pool excluding nothing, through the relevance floor (called
    only when the verified person, not cleared, has a withheld note in the pool). Only notes owned by the verified
    person or by a group of theirs count; public notes and anyone unverified never get a step-up.
    """
    person = decision.verified_user_id
    if person is None or not withheld or person in clearance.cleared_owner_ids:
        return None
    own = {person} | {group.id for group in groups_of(person)}
    own &= {owner for owner, kind in scopes.items() if kind in ("personal", "group")}
    would_use = [item for item in retrieve_all().notes if item.note.id in withheld and item.note.owner_id in own]
    if not would_use:
        return None
    settings = config.sensitive
    palm = settings.verification == "face+palm" or config.capture.palm_source is not None
    if settings.verification == "face+palm":
        needs = "face+palm"
    else:
        needs = f"score >= {clearance.threshold:.3f}" if clearance.threshold is not None else "a stronger probe"
    return StepUp(len(would_use), needs, decision.modality, decision.scores.get(person), palm)
