"""The one gate: probe validation, per-user scores, the two policies, the states that hide memory, the words for
a person, and (property) the threshold policy equals the paper's per-note formula."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from retrieval.reference import m_bio

from kiosk.errors import DataError, ProbeError
from kiosk.identity.gate import (
    AMBIGUOUS,
    GateRule,
    Identity,
    decide,
    describe,
    gate,
    user_scores,
    validate_probe,
    verified_identity,
)
from kiosk.identity.probe import Probe
from kiosk.memory.note import Note, Template
from kiosk.retrieval import validate_query

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
        gate(probe(vector), TEMPLATES, GateRule(0.5))


def test_bad_probe_is_rejected_even_with_two_faces_in_view() -> None:
    with pytest.raises(ProbeError):
        gate(probe(np.zeros(3, np.float32), faces_in_view=2), TEMPLATES, GateRule(0.5))


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


def test_a_probe_with_variants_scores_each_template_by_its_best_row() -> None:
    """palm.alignment_search: a template's score is the largest cosine over the probe vector and its variants."""
    variants = np.stack([unit(0, 1, 0), unit(0, 0, 1)])
    plain = user_scores(probe(unit(1, 0, 0)), TEMPLATES).scores
    searched = user_scores(probe(unit(1, 0, 0), variants=variants), TEMPLATES).scores
    assert searched[1] == pytest.approx(1.0) == plain[1]  # the vector itself is still a candidate
    assert plain[2] == pytest.approx(0.0) and searched[2] == pytest.approx(1.0)  # a variant matches user 2
    assert searched[3] == pytest.approx(max(plain[3], float(unit(0.7, 0.7, 0) @ unit(0, 1, 0))))
    decision = gate(probe(unit(1, 0, 0), variants=variants[1:]), TEMPLATES, GateRule(0.9))
    assert decision.scores == pytest.approx(plain)  # a variant matching nobody changes nothing


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        (np.zeros((2, 3), np.float32), "zero vector"),
        (np.array([[1.0, np.nan, 0.0]], np.float32), "NaN"),
        (np.ones((2, 4), np.float32), r"expected \(V, 3\)"),
        (np.ones(3, np.float32), r"expected \(V, 3\)"),
        (np.empty((0, 3), np.float32), r"expected \(V, 3\)"),
    ],
)
def test_bad_variants_are_rejected_like_a_bad_vector(variants: np.ndarray, message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        gate(probe(unit(1, 0, 0), variants=variants), TEMPLATES, GateRule(0.5))
    with pytest.raises(ProbeError, match=message):
        gate(probe(unit(1, 0, 0), variants=variants, faces_in_view=2), TEMPLATES, GateRule(0.5))


def test_threshold_policy_opens_every_owner_that_passes() -> None:
    decision = gate(probe(unit(0.8, 0.6, 0)), TEMPLATES, GateRule(0.75, "threshold"))
    assert decision.matched_owner_ids == (3, 1)  # best first
    assert decision.decision == "owner" and decision.reason == "matched"


def test_best_match_opens_only_the_best_with_margin() -> None:
    decision = gate(probe(unit(1, 0.02, 0)), TEMPLATES, GateRule(0.6, "best-match", margin=0.05))
    assert decision.matched_owner_ids == (1,)
    assert decision.verified_user_id == 1


def test_best_match_refuses_a_close_runner_up() -> None:
    decision = gate(probe(unit(0.9135, 0.4067, 0)), TEMPLATES, GateRule(0.6, "best-match", margin=0.05))
    assert decision.matched_owner_ids == ()
    assert decision.reason == "ambiguous" and decision.decision == "fallback"


def test_exact_tie_is_never_a_best_match_even_without_margin() -> None:
    assert decide({1: 0.9, 2: 0.9}, GateRule(0.5, "best-match", 0.0)).reason == "ambiguous"
    assert decide({1: 0.9, 2: 0.9}, GateRule(0.5, "threshold")).matched_owner_ids == (1, 2)


def test_a_runner_up_below_tau_but_within_the_margin_is_still_ambiguous() -> None:
    """The answer path's rule, which every caller now shares: the runner-up's own score does not matter."""
    decision = decide({1: 0.70, 2: 0.66}, GateRule(0.68, "best-match", 0.05))
    assert decision.reason == AMBIGUOUS and decision.verified_user_id is None
    assert decide({1: 0.70, 2: 0.64}, GateRule(0.68, "best-match", 0.05)).verified_user_id == 1


def test_below_threshold_is_no_match() -> None:
    decision = gate(probe(unit(0, 0, 1)), TEMPLATES, GateRule(0.5))
    assert decision.reason == "no match" and decision.matched_owner_ids == ()
    assert decision.best_score == pytest.approx(0.0, abs=1e-6)


def test_threshold_is_inclusive() -> None:
    assert decide({7: 0.5}, GateRule(0.5, "threshold")).matched_owner_ids == (7,)
    assert decide({7: 0.5}, GateRule(0.5, "best-match")).matched_owner_ids == (7,)


def test_two_faces_hide_personal_memory() -> None:
    decision = gate(probe(unit(1, 0, 0), faces_in_view=2), TEMPLATES, GateRule(0.5))
    assert decision.decision == "hidden-multiple-faces"
    assert decision.matched_owner_ids == ()


def test_no_probe_and_no_enrolled_users_fall_back() -> None:
    assert gate(None, TEMPLATES, GateRule(0.5)).decision == "fallback"
    assert gate(probe(unit(1, 0, 0)), [], GateRule(0.5)).reason == "no enrolled users"


def test_decision_serialises() -> None:
    payload = gate(probe(unit(1, 0, 0)), TEMPLATES, GateRule(0.5)).as_dict()
    assert payload["decision"] == "owner" and payload["scores"]["1"] == pytest.approx(1.0)


def test_writing_needs_a_single_author_whatever_the_read_policy() -> None:
    rule = GateRule(0.5, "threshold", 0.05)
    assert rule.single_author() == GateRule(0.5, "best-match", 0.05)
    assert decide({1: 0.9, 2: 0.88}, rule).matched_owner_ids == (1, 2)
    assert decide({1: 0.9, 2: 0.88}, rule.single_author()).verified_user_id is None


def test_the_verified_identity_is_named_and_scored() -> None:
    decision = decide({1: 0.9, 2: 0.2}, GateRule(0.5, "best-match", 0.05), modality="face")
    assert verified_identity(decision, {1: "Ana"}.get) == Identity(1, "Ana", 0.9, "face")
    assert verified_identity(decision, lambda user: None) == Identity(1, "user 1", 0.9, "face")
    assert verified_identity(decide({1: 0.3}, GateRule(0.5)), {1: "Ana"}.get) is None


NAMES = {1: "Ana", 2: "Ben"}.get


@pytest.mark.parametrize(
    ("scores", "rule", "words"),
    [
        ({1: 0.9, 2: 0.2}, GateRule(0.5, "best-match", 0.05), "Ana (0.900 >= tau 0.500)"),
        ({1: 0.4, 2: 0.2}, GateRule(0.5), "not recognised (best Ana 0.400 < tau 0.500)"),
        (
            {1: 0.7, 2: 0.66},
            GateRule(0.68, "best-match", 0.05),
            "Ana (0.700) and Ben (0.660) are within margin 0.050; not deciding",
        ),
        ({1: 0.9, 2: 0.8}, GateRule(0.5, "threshold"), "Ana, Ben all reach tau 0.500"),
        ({}, GateRule(0.5), "no biometric templates to compare with"),
    ],
)
def test_a_decision_is_put_in_words_from_the_decision_alone(
    scores: dict[int, float], rule: GateRule, words: str
) -> None:
    assert describe(decide(scores, rule), NAMES) == words


def test_hidden_memory_is_put_in_words() -> None:
    two = gate(probe(unit(1, 0, 0), faces_in_view=2), TEMPLATES, GateRule(0.5))
    assert describe(two) == "several people in view: personal memory hidden"
    assert describe(gate(None, TEMPLATES, GateRule(0.5))) == "no probe"


GRID = st.integers(0, 99).map(lambda k: k / 100)


@given(
    scores=st.lists(GRID, min_size=1, max_size=5),
    tau=st.integers(0, 98).map(lambda k: k / 100 + 0.005),
)
def test_threshold_policy_opens_exactly_the_owners_the_per_note_formula_opens(scores: list[float], tau: float) -> None:
    """Under policy "threshold" the gate is the paper's M_bio, evaluated once per owner instead of per note."""
    dim = len(scores) + 1
    templates = []
    notes = []
    for user, score in enumerate(scores, start=1):
        vector = np.zeros(dim, np.float32)
        vector[0], vector[user] = score, np.sqrt(1 - score**2)
        templates.append(template(user, vector, tid=user))
        notes.append(Note(id=None, owner_id=user, modality="face", content=f"note of {user}", timestamp=NOW))
    query = np.eye(dim, dtype=np.float32)[0]
    decision = gate(probe(query), templates, GateRule(tau, "threshold"))
    per_note = {note.owner_id for note in notes if m_bio(note, query, "face", SHA, tau, templates)}
    assert set(decision.matched_owner_ids) == per_note
    assert set(decision.matched_owner_ids) == {user for user, score in enumerate(scores, start=1) if score >= tau}
