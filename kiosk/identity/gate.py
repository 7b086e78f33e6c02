"""The biometric gate: the one place a probe's scores become an identity.

Per note the paper's rule is M_bio(m_i) = 1 iff cos(b_t, b_i) >= tau, with b_i the note owner's templates of
the probe's modality. Every note of one owner shares the same templates, so the rule is evaluated once per
enrolled user (max cosine over that user's templates, `user_scores`) and `decide` applies the policy:

- threshold: every user whose score reaches tau (the paper's per-note rule);
- best-match: only the best user, and only if it reaches tau and beats the runner-up by the margin, whatever
  the runner-up's own score (a tie is never a match: a shared terminal must not guess between two people).

`gate` adds the states that never open anyone's memory (no probe, several faces, a suspected presentation
attack). Answers, remembering, "my memories", forget-me, the CLI and the evaluation all decide through here;
`describe` words a decision for a person and `verified_identity` names the one person it verifies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import numpy as np

from kiosk.errors import ProbeError
from kiosk.identity.probe import Probe

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


class TemplateLike(Protocol):
    """What the gate reads from a stored template (kiosk.memory.note.Template fits)."""

    @property
    def user_id(self) -> int: ...
    @property
    def modality(self) -> str: ...
    @property
    def vector(self) -> np.ndarray: ...
    @property
    def model_sha256(self) -> str: ...


@dataclass(frozen=True)
class GateRule:
    """How scores become a decision: tau, the policy, and best-match's margin over the runner-up."""

    threshold: float
    policy: GatePolicy = "best-match"
    margin: float = 0.0

    def single_author(self) -> GateRule:
        """The rule for writing a note: best-match whatever the read policy, so a note has exactly one author."""
        return replace(self, policy="best-match")


@dataclass(frozen=True)
class Identity:
    """The one person a probe verified: who, by name, with which score in which modality."""

    user_id: int
    name: str
    score: float
    modality: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "name": self.name, "score": self.score, "modality": self.modality}


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
        """The single identity this probe proves, if any: the only person it may act as (remember, own notes)."""
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


def refused(
    reason: str, policy: GatePolicy, threshold: float | None = None, modality: str | None = None, margin: float = 0.0
) -> GateDecision:
    """A decision made before any score: nobody's memory opens."""
    return GateDecision((), {}, reason, policy, threshold, modality, margin)


@dataclass(frozen=True)
class UserScores:
    """Max cosine per enrolled user, and how many templates of another encoder were left out."""

    scores: dict[int, float] = field(default_factory=dict)
    skipped_templates: int = 0


def validate_probe(probe: Probe, dimension: int | None = None) -> np.ndarray:
    """The probe's vector as unit-length float64; ProbeError for a wrong shape, NaN/inf or a zero vector (the
    re-aligned variants, if any, are checked the same way: `probe_rows`)."""
    return probe_rows(probe, dimension)[0]


def probe_rows(probe: Probe, dimension: int | None = None) -> np.ndarray:
    """(1 + V, D) unit-length float64: the probe's vector, then its re-aligned variants (palm.alignment_search)."""
    vector = np.asarray(probe.vector)
    if vector.ndim != 1 or vector.size == 0:
        raise ProbeError(
            f"the {probe.modality} probe has shape {vector.shape}, expected one vector",
            "pass a single embedding (1-D array)",
        )
    if dimension is not None and vector.shape[0] != dimension:
        raise ProbeError(
            f"the {probe.modality} probe has {vector.shape[0]} dimensions but the enrolled templates have {dimension}",
            "use the embedder the users were enrolled with",
        )
    rows = [_unit_rows(vector[None, :], probe.modality, "probe")]
    if probe.variants is not None:
        variants = np.asarray(probe.variants)
        if variants.ndim != 2 or variants.shape[0] == 0 or variants.shape[1] != vector.shape[0]:
            raise ProbeError(
                f"the {probe.modality} probe's re-aligned variants have shape {variants.shape}, expected "
                f"(V, {vector.shape[0]})",
                "pass one row per re-alignment, as long as the probe vector",
            )
        rows.append(_unit_rows(variants, probe.modality, "probe's re-aligned variants"))
    return np.concatenate(rows)


def _unit_rows(rows: np.ndarray, modality: str, what: str) -> np.ndarray:
    if not np.issubdtype(rows.dtype, np.number):
        raise ProbeError(f"the {modality} {what} is not numeric ({rows.dtype})", "pass a float embedding")
    values = rows.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise ProbeError(f"the {modality} {what} contains NaN or infinite values", "capture a new probe")
    norms = np.linalg.norm(values, axis=1, keepdims=True)
    if np.any(norms == 0.0) or not np.all(np.isfinite(norms)):
        raise ProbeError(f"the {modality} {what} contains a zero vector", "capture a new probe")
    return values / norms


def user_scores(probe: Probe, templates: Sequence[TemplateLike]) -> UserScores:
    """Max cosine per enrolled user over that user's templates of the probe's modality and encoder.

    A probe with re-aligned variants scores each template as the largest cosine over its vector and variants.
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
    rows = probe_rows(probe, dimensions.pop() if dimensions else None)
    if not usable:
        return UserScores({}, skipped)
    matrix = np.stack([np.asarray(t.vector, dtype=np.float64) for t in usable])
    norms = np.linalg.norm(matrix, axis=1)
    cosines = (matrix @ rows.T).max(axis=1) / np.where(norms > 0, norms, 1.0)
    scores: dict[int, float] = {}
    for template, cosine in zip(usable, cosines, strict=True):
        value = float(cosine)
        if template.user_id not in scores or value > scores[template.user_id]:
            scores[template.user_id] = value
    return UserScores(scores, skipped)


def decide(
    scores: Mapping[int, float], rule: GateRule, *, modality: str | None = None, skipped_templates: int = 0
) -> GateDecision:
    """Apply the rule's policy to per-user scores (see the module docstring)."""
    ranked = _ranked(scores)
    best_user, best_score = ranked[0] if ranked else (None, None)
    runner_up = ranked[1][1] if len(ranked) > 1 else None
    common: dict[str, Any] = {
        "scores": dict(scores),
        "policy": rule.policy,
        "threshold": rule.threshold,
        "modality": modality,
        "margin": rule.margin,
        "best_user_id": best_user,
        "best_score": best_score,
        "runner_up_score": runner_up,
        "skipped_templates": skipped_templates,
    }
    if not ranked:
        return GateDecision((), reason=NO_ENROLLED, **common)
    if rule.policy == "threshold":
        matched = tuple(user for user, score in ranked if score >= rule.threshold)
        return GateDecision(matched, reason=MATCHED if matched else NO_MATCH, **common)
    assert best_user is not None and best_score is not None
    if best_score < rule.threshold:
        return GateDecision((), reason=NO_MATCH, **common)
    if runner_up is not None and (best_score - runner_up < rule.margin or best_score == runner_up):
        return GateDecision((), reason=AMBIGUOUS, **common)
    return GateDecision((best_user,), reason=MATCHED, **common)


def gate(probe: Probe | None, templates: Sequence[TemplateLike], rule: GateRule) -> GateDecision:
    """The whole gate for one probe: no probe, several faces in view or a suspected presentation attack never
    open anyone's memory."""
    if probe is None:
        return refused(NO_PROBE, rule.policy, rule.threshold, None, rule.margin)
    if probe.faces_in_view > 1:
        # Still validated: a broken probe is an error even when memory would be hidden anyway.
        validate_probe(probe)
        return refused(MULTIPLE_FACES, rule.policy, rule.threshold, probe.modality, rule.margin)
    if probe.liveness_blocks:
        validate_probe(probe)
        return refused(PRESENTATION_ATTACK, rule.policy, rule.threshold, probe.modality, rule.margin)
    result = user_scores(probe, templates)
    return decide(result.scores, rule, modality=probe.modality, skipped_templates=result.skipped_templates)


def verified_identity(decision: GateDecision, name_of: Callable[[int], str | None]) -> Identity | None:
    """The single person the decision verifies, named, or None."""
    user_id = decision.verified_user_id
    if user_id is None:
        return None
    return Identity(user_id, name_of(user_id) or f"user {user_id}", decision.scores[user_id], decision.modality)


def describe(decision: GateDecision, name_of: Callable[[int], str | None] = lambda user: None) -> str:
    """The decision in words for the person at the terminal (and the CLI's human output)."""

    def label(user: int) -> str:
        return name_of(user) or f"user {user}"

    ranked = _ranked(decision.scores)
    tau = f"tau {decision.threshold:.3f}" if decision.threshold is not None else "no tau"
    if decision.reason == MATCHED:
        if len(decision.matched_owner_ids) == 1:
            user = decision.matched_owner_ids[0]
            return f"{label(user)} ({decision.scores[user]:.3f} >= {tau})"
        return f"{', '.join(label(user) for user in decision.matched_owner_ids)} all reach {tau}"
    if decision.reason == NO_MATCH and ranked:
        best, score = ranked[0]
        return f"not recognised (best {label(best)} {score:.3f} < {tau})"
    if decision.reason == AMBIGUOUS and len(ranked) > 1:
        (best, score), (runner, runner_score) = ranked[0], ranked[1]
        return (
            f"{label(best)} ({score:.3f}) and {label(runner)} ({runner_score:.3f}) are within margin "
            f"{decision.margin:.3f}; not deciding"
        )
    if decision.reason == NO_ENROLLED:
        stale = decision.skipped_templates
        why = f" ({stale} templates were made by another model; re-enroll)" if stale else ""
        return f"no {decision.modality or 'biometric'} templates to compare with{why}"
    if decision.reason == MULTIPLE_FACES:
        return "several people in view: personal memory hidden"
    if decision.reason == PRESENTATION_ATTACK:
        return "presentation attack suspected: personal memory hidden"
    return decision.reason


def _ranked(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    """Best first; equal scores by user id, so the order never depends on how the scores were gathered."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
