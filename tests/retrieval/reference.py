"""The seed paper's gate written literally, one note at a time: the oracle the fast path must equal."""

from __future__ import annotations

from collections.abc import Sequence

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
) -> list[int]:
    """Matched pool -> chronological -> top-K by cosine (ties by note id) -> chronological note ids."""
    pool = [n for n in notes if m_bio(n, probe, modality, sha, tau, templates)]
    if policy == "best-match":
        winner = best_match_owner(probe, modality, sha, tau, margin, templates)
        pool = [n for n in pool if n.owner_id == winner]
    pool.sort(key=lambda n: (n.timestamp, n.id))
    top = sorted(pool, key=lambda n: (-cosine(query, n.embedding), n.id))[:k]  # type: ignore[arg-type]
    return [int(n.id) for n in sorted(top, key=lambda n: (n.timestamp, n.id))]  # type: ignore[arg-type]
