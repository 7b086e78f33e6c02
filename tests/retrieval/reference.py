"""The seed paper's gate written literally, one note at a time: the oracle the fast path must equal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kiosk.memory.note import Note, Template


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    return float(np.dot(a64, b64) / (np.linalg.norm(a64) * np.linalg.norm(b64)))


def m_bio(note: Note, probe: np.ndarray, modality: str, sha: str, tau: float, templates: Sequence[Template]) -> bool:
    """M_bio(m_i) = 1 iff cos(b_t, b_i) >= tau for a template b_i of the note's owner (probe's modality)."""
    owner_templates = [
        t for t in templates if t.user_id == note.owner_id and t.modality == modality and t.model_sha256 == sha
    ]
    return any(cosine(probe, t.vector) >= tau for t in owner_templates)


def best_match_owner(
    probe: np.ndarray, modality: str, sha: str, tau: float, margin: float, templates: Sequence[Template]
) -> int | None:
    best: dict[int, float] = {}
    for t in templates:
        if t.modality == modality and t.model_sha256 == sha:
            best[t.user_id] = max(best.get(t.user_id, -2.0), cosine(probe, t.vector))
    ranked = sorted(best.items(), key=lambda item: -item[1])
    if not ranked or ranked[0][1] < tau:
        return None
    if len(ranked) > 1 and (ranked[0][1] - ranked[1][1] < margin or ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


@dataclass(frozen=True)
class Scopes:
    """Who reads what: members of each group (by group owner id), the public owner, and the ranking weights."""

    members: Mapping[int, frozenset[int]] = field(default_factory=dict)
    public_owner: int | None = None
    beta: float = 0.0
    relevance: Mapping[str, float] = field(default_factory=lambda: {"personal": 1.0, "group": 0.5, "public": 0.0})

    def kind(self, note: Note) -> str:
        if note.owner_id == self.public_owner:
            return "public"
        return "group" if note.owner_id in self.members else "personal"

    def readers(self, note: Note) -> frozenset[int] | None:
        """The people who may read the note; None means everyone (a public note)."""
        kind = self.kind(note)
        if kind == "public":
            return None
        return self.members[note.owner_id] if kind == "group" else frozenset({note.owner_id})


NO_SCOPES = Scopes()


def m_scoped(
    note: Note, probe: np.ndarray, modality: str, sha: str, tau: float, templates: Sequence[Template], scopes: Scopes
) -> bool:
    """M(m_i) = 1 iff m_i is public, or some reader of m_i has a template b with cos(b_t, b) >= tau."""
    readers = scopes.readers(note)
    if readers is None:
        return True
    return any(
        cosine(probe, t.vector) >= tau
        for t in templates
        if t.user_id in readers and t.modality == modality and t.model_sha256 == sha
    )


def reference_context(
    notes: Sequence[Note],
    templates: Sequence[Template],
    probe: np.ndarray,
    modality: str,
    sha: str,
    tau: float,
    query: np.ndarray,
    k: int,
    policy: str = "threshold",
    margin: float = 0.0,
    scopes: Scopes = NO_SCOPES,
) -> list[int]:
    """Readable pool -> top-K by cosine + beta * scope relevance (ties by note id) -> chronological note ids."""
    pool = [n for n in notes if m_scoped(n, probe, modality, sha, tau, templates, scopes)]
    if policy == "best-match":
        winner = best_match_owner(probe, modality, sha, tau, margin, templates)
        pool = [n for n in pool if (readers := scopes.readers(n)) is None or winner in readers]
    pool.sort(key=lambda n: (n.timestamp, n.id))

    def score(n: Note) -> float:
        return cosine(query, n.embedding) + scopes.beta * scopes.relevance[scopes.kind(n)]  # type: ignore[arg-type]

    top = sorted(pool, key=lambda n: (-score(n), n.id))[:k]
    return [int(n.id) for n in sorted(top, key=lambda n: (n.timestamp, n.id))]  # type: ignore[arg-type]
