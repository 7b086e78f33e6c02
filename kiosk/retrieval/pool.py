"""What a query may search once the gate has decided: the scoped pool of owners, and the question itself.

Scopes extend the gate's per-note rule (kiosk.identity.gate) with a note's readers: the owner for a personal
note, the members of its group for a group note, everyone for a public note. M(m_i) = 1 iff m_i is public, or
some reader of m_i passes the gate. `scoped_pool` turns a decision into those owner ids: the matched people,
their groups, and the public owner. tests/retrieval/reference.py holds the literal per-note formula.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kiosk.errors import DataError
from kiosk.identity.gate import GateDecision
from kiosk.memory.scopes import ScopeKind


def validate_query(question: str) -> str:
    """The question text, stripped; an empty one is an error before anything is retrieved."""
    if not isinstance(question, str):
        raise DataError(f"the question must be text, not {type(question).__name__}", "type a question")
    text = question.strip()
    if not text:
        raise DataError("the question is empty", "type a question before asking")
    return text


@dataclass(frozen=True)
class ScopedPool:
    """The owners a query may search, each with the scope its notes have for this requester."""

    scopes: dict[int, ScopeKind]

    @property
    def owner_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.scopes))

    @property
    def personal(self) -> bool:
        """Whether anyone's own (personal or group) memory is in the pool, beyond the public notes."""
        return any(kind != "public" for kind in self.scopes.values())


def scoped_pool(
    decision: GateDecision, groups_of: Callable[[int], Sequence[int]], public_owner_id: int | None
) -> ScopedPool:
    """Matched people's personal notes + the notes of every group they belong to + the public notes.

    A group is reached only through a person the gate matched, so a non-member never receives a group
    note; nobody matched (unknown face, no probe, several faces) leaves the public notes only.
    """
    scopes: dict[int, ScopeKind] = {}
    if public_owner_id is not None:
        scopes[public_owner_id] = "public"
    for user in decision.matched_owner_ids:
        scopes[user] = "personal"
    for user in decision.matched_owner_ids:
        for group in groups_of(user):
            scopes.setdefault(group, "group")
    return ScopedPool(scopes)
