"""The biometric gate: which owners' memories a live probe may reach, decided before any semantic ranking.

Per note the rule is M_bio(m_i) = 1 iff cos(b_t, b_i) >= tau, with b_i the note owner's templates of the
probe's modality. Every note of one owner shares the same templates, so the rule is evaluated once per
enrolled user (max cosine over that user's templates) and retrieval then searches only the partitions of
the owners that passed. tests/retrieval/reference.py holds the literal per-note formula the tests compare to.

Scopes extend the rule with a note's readers: the owner for a personal note, the members of its group for a
group note, everyone for a public note. M(m_i) = 1 iff m_i is public, or some reader of m_i passes the gate.
`scoped_pool` turns a decision into those owner ids: the matched people, their groups, and the public owner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from kiosk.errors import DataError, ProbeError
from kiosk.identity.probe import Probe
from kiosk.memory.note import Template
from kiosk.memory.scopes import ScopeKind

GatePolicy = Literal["threshold", "best-match"]
Decision = Literal["owner", "fallback", "hidden-multiple-faces"]

MATCHED = "matched"
NO_MATCH = "no match"
AMBIGUOUS = "ambiguous"
NO_PROBE = "no probe"
NO_ENROLLED = "no enrolled users"
MULTIPLE_FACES = "multiple faces in view"
BACKING_OFF = "too many failed verifications: backing off"
PRESENTATION_ATTACK = "presentation attack suspected"
FAILED = (NO_MATCH, AMBIGUOUS, PRESENTATION_ATTACK)
"""Reasons that count as a failed verification for the back-off."""


@dataclass(frozen=True)
class GateDecision:
    """Who the probe may read memories of, with every enrolled user's score and why."""

    matched_owner_ids: tuple[int, ...]
    scores: dict[int, float]
    reason: str
    policy: GatePolicy
    threshold: float | None
    modality: str | None
    margin: float = 0.0
    best_user_id: int | None = None
    best_score: float | None = None
    runner_up_score: float | None = None
    skipped_templates: int = 0

    @property
    def decision(self) -> Decision:
        if self.reason == MULTIPLE_FACES:
            return "hidden-multiple-faces"
        return "owner" if self.matched_owner_ids else "fallback"

    @property
    def verified_user_id(self) -> int | None:
        """The single identity this probe proves, if any: new memories are stored only for it."""
        if len(self.matched_owner_ids) == 1:
            return self.matched_owner_ids[0]
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "reason": self.reason,
            "policy": self.policy,
            "modality": self.modality,
            "threshold": self.threshold,
            "margin": self.margin,
            "matched_owner_ids": list(self.matched_owner_ids),
            "best_user_id": self.best_user_id,
            "best_score": self.best_score,
            "runner_up_score": self.runner_up_score,
            "scores": {str(user): score for user, score in sorted(self.scores.items())},
            "skipped_templates": self.skipped_templates,
        }


@dataclass(frozen=True)
class _UserScores:
    scores: dict[int, float] = field(default_factory=dict)
    skipped_templates: int = 0


def validate_query(question: str) -> str:
    """The question text, stripped; an empty one is an error before anything is retrieved."""
    if not isinstance(question, str):
        raise DataError(f"the question must be text, not {type(question).__name__}", "type a question")
    text = question.strip()
    if not text:
        raise DataError("the question is empty", "type a question before asking")
    return text


def validate_probe(probe: Probe, dimension: int | None = None) -> np.ndarray:
    """The probe's vector as unit-length float64; ProbeError for a wrong shape, NaN/inf or a zero vector."""
    vector = np.asarray(probe.vector)
    if vector.ndim != 1 or vector.size == 0:
        raise ProbeError(
            f"the {probe.modality} probe has shape {vector.shape}, expected one vector",
            "pass a single embedding (1-D array)",
        )
    if not np.issubdtype(vector.dtype, np.number):
        raise ProbeError(f"the {probe.modality} probe is not numeric ({vector.dtype})", "pass a float embedding")
    if dimension is not None and vector.shape[0] != dimension:
        raise ProbeError(
            f"the {probe.modality} probe has {vector.shape[0]} dimensions but the enrolled templates have {dimension}",
            "use the embedder the users were enrolled with",
        )
    values = vector.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise ProbeError(f"the {probe.modality} probe contains NaN or infinite values", "capture a new probe")
    norm = float(np.linalg.norm(values))
    if norm == 0.0 or not math.isfinite(norm):
        raise ProbeError(f"the {probe.modality} probe is a zero vector", "capture a new probe")
    return values / norm


def user_scores(probe: Probe, templates: Sequence[Template]) -> _UserScores:
    """Max cosine per enrolled user over that user's templates of the probe's modality and encoder.

    Templates made by another encoder model are skipped: their cosines live on a different scale.
    """
    usable = [t for t in templates if t.modality == probe.modality and t.model_sha256 == probe.model_sha256]
    skipped = sum(1 for t in templates if t.modality == probe.modality) - len(usable)
    dimensions = {int(np.asarray(t.vector).shape[-1]) for t in usable}
    if len(dimensions) > 1:
        raise ProbeError(
            f"enrolled {probe.modality} templates have mixed dimensions {sorted(dimensions)}",
            "re-enroll the users with one embedder",
        )
    probe_vector = validate_probe(probe, dimensions.pop() if dimensions else None)
    if not usable:
        return _UserScores({}, skipped)
    matrix = np.stack([np.asarray(t.vector, dtype=np.float64) for t in usable])
    norms = np.linalg.norm(matrix, axis=1)
    cosines = (matrix @ probe_vector) / np.where(norms > 0, norms, 1.0)
    scores: dict[int, float] = {}
    for template, cosine in zip(usable, cosines, strict=True):
        value = float(cosine)
        if template.user_id not in scores or value > scores[template.user_id]:
            scores[template.user_id] = value
    return _UserScores(scores, skipped)


def decide(
    scores: Mapping[int, float],
    threshold: float,
    policy: GatePolicy = "best-match",
    margin: float = 0.0,
    *,
    modality: str | None = None,
    skipped_templates: int = 0,
) -> GateDecision:
    """Apply a gate policy to per-user scores.

    threshold: every user whose score reaches tau (the paper's per-note rule).
    best-match: only the best user, and only if it reaches tau and beats the runner-up by `margin`
    (a tie is never a match: a shared terminal must not guess between two people).
    """
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    best_user, best_score = ranked[0] if ranked else (None, None)
    runner_up = ranked[1][1] if len(ranked) > 1 else None
    common: dict[str, Any] = {
        "scores": dict(scores),
        "policy": policy,
        "threshold": threshold,
        "modality": modality,
        "margin": margin,
        "best_user_id": best_user,
        "best_score": best_score,
        "runner_up_score": runner_up,
        "skipped_templates": skipped_templates,
    }
    if not ranked:
        return GateDecision((), reason=NO_ENROLLED, **common)
    if policy == "threshold":
        matched = tuple(user for user, score in ranked if score >= threshold)
        return GateDecision(matched, reason=MATCHED if matched else NO_MATCH, **common)
    assert best_user is not None and best_score is not None
    if best_score < threshold:
        return GateDecision((), reason=NO_MATCH, **common)
    if runner_up is not None and (best_score - runner_up < margin or best_score == runner_up):
        return GateDecision((), reason=AMBIGUOUS, **common)
    return GateDecision((best_user,), reason=MATCHED, **common)


def gate(
    probe: Probe | None,
    templates: Sequence[Template],
    threshold: float,
    policy: GatePolicy = "best-match",
    margin: float = 0.0,
) -> GateDecision:
    """The whole gate for one query: no probe, several faces in view or a suspected presentation attack never
    open anyone's memory."""
    if probe is None:
        return GateDecision((), {}, NO_PROBE, policy, threshold, None, margin)
    if probe.faces_in_view > 1:
        # Still validated: a broken probe is an error even when memory would be hidden anyway.
        validate_probe(probe)
        return GateDecision((), {}, MULTIPLE_FACES, policy, threshold, probe.modality, margin)
    if probe.liveness_blocks:
        validate_probe(probe)
        return GateDecision((), {}, PRESENTATION_ATTACK, policy, threshold, probe.modality, margin)
    result = user_scores(probe, templates)
    return decide(
        result.scores,
        threshold,
        policy,
        margin,
        modality=probe.modality,
        skipped_templates=result.skipped_templates,
    )


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
