"""Gate: probe validation, per-user scores, the two policies, and the states that hide memory."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from kiosk.errors import DataError, ProbeError
from kiosk.identity.probe import Probe
from kiosk.memory.note import Template
from kiosk.retrieval import decide, gate, user_scores, validate_probe, validate_query

SHA = "f" * 64
NOW = datetime(2024, 1, 1, tzinfo=UTC)


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def template(user: int, vector: np.ndarray, modality: str = "face", sha: str = SHA, tid: int = 0) -> Template:
    return Template(tid, user, modality, vector, sha, NOW)


def probe(vector: np.ndarray, **extra: object) -> Probe:
    return Probe("face", vector, SHA, captured_at=0.0, **extra)  # type: ignore[arg-type]


TEMPLATES = [
    template(1, unit(1, 0, 0)),
    template(1, unit(0.9, 0.1, 0)),
    template(2, unit(0, 1, 0)),
    template(3, unit(0.7, 0.7, 0)),
    template(4, unit(1, 0, 0), modality="palm"),
    template(5, unit(1, 0, 0), sha="0" * 64),
]


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        (np.zeros(3, np.float32), "zero vector"),
        (np.array([1.0, np.nan, 0.0], np.float32), "NaN"),
        (np.array([1.0, np.inf, 0.0], np.float32), "NaN or infinite"),
        (unit(1, 0, 0, 0), "4 dimensions but the enrolled templates have 3"),
        (np.ones((2, 3), np.float32), "expected one vector"),
        (np.zeros(0, np.float32), "expected one vector"),
    ],
)
def test_bad_probes_are_rejected_before_any_score(vector: np.ndarray, message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        gate(probe(vector), TEMPLATES, 0.5)


def test_bad_probe_is_rejected_even_with_two_faces_in_view() -> None:
    with pytest.raises(ProbeError):
        gate(probe(np.zeros(3, np.float32), faces_in_view=2), TEMPLATES, 0.5)


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_question_is_an_error(question: str) -> None:
    with pytest.raises(DataError, match="empty"):
        validate_query(question)


def test_validate_probe_normalises() -> None:
    out = validate_probe(probe(np.array([3.0, 4.0, 0.0], np.float32)))
    assert out == pytest.approx([0.6, 0.8, 0.0])


def test_scores_are_max_over_templates_of_probe_modality_and_encoder() -> None:
    result = user_scores(probe(unit(0.9, 0.1, 0)), TEMPLATES)
    assert set(result.scores) == {1, 2, 3}  # palm (4) and the other encoder's face template (5) are ignored
    assert result.scores[1] == pytest.approx(1.0)
    assert result.skipped_templates == 1


def test_threshold_policy_opens_every_owner_that_passes() -> None:
    decision = gate(probe(unit(0.8, 0.6, 0)), TEMPLATES, 0.75, "threshold")
    assert decision.matched_owner_ids == (3, 1)  # best first
    assert decision.decision == "owner" and decision.reason == "matched"


def test_best_match_opens_only_the_best_with_margin() -> None:
    decision = gate(probe(unit(1, 0.02, 0)), TEMPLATES, 0.6, "best-match", margin=0.05)
    assert decision.matched_owner_ids == (1,)
    assert decision.verified_user_id == 1


def test_best_match_refuses_a_close_runner_up() -> None:
    decision = gate(probe(unit(0.9135, 0.4067, 0)), TEMPLATES, 0.6, "best-match", margin=0.05)
    assert decision.matched_owner_ids == ()
    assert decision.reason == "ambiguous" and decision.decision == "fallback"


def test_exact_tie_is_never_a_best_match_even_without_margin() -> None:
    assert decide({1: 0.9, 2: 0.9}, 0.5, "best-match", 0.0).reason == "ambiguous"
    assert decide({1: 0.9, 2: 0.9}, 0.5, "threshold").matched_owner_ids == (1, 2)


def test_below_threshold_is_no_match() -> None:
    decision = gate(probe(unit(0, 0, 1)), TEMPLATES, 0.5)
    assert decision.reason == "no match" and decision.matched_owner_ids == ()
    assert decision.best_score == pytest.approx(0.0, abs=1e-6)


def test_threshold_is_inclusive() -> None:
    assert decide({7: 0.5}, 0.5, "threshold").matched_owner_ids == (7,)
    assert decide({7: 0.5}, 0.5, "best-match").matched_owner_ids == (7,)


def test_two_faces_hide_personal_memory() -> None:
    decision = gate(probe(unit(1, 0, 0), faces_in_view=2), TEMPLATES, 0.5)
    assert decision.decision == "hidden-multiple-faces"
    assert decision.matched_owner_ids == ()


def test_no_probe_and_no_enrolled_users_fall_back() -> None:
    assert gate(None, TEMPLATES, 0.5).decision == "fallback"
    assert gate(probe(unit(1, 0, 0)), [], 0.5).reason == "no enrolled users"


def test_decision_serialises() -> None:
    payload = gate(probe(unit(1, 0, 0)), TEMPLATES, 0.5).as_dict()
    assert payload["decision"] == "owner" and payload["scores"]["1"] == pytest.approx(1.0)
