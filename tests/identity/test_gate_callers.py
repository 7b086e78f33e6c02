"""Property: every path that decides who stands at the terminal authorises exactly the person the one gate does.

The callers: the answer path (Assistant.answer), the kiosk's own-memories actions (list, delete, forget me:
kiosk.app.memories on a verification made by kiosk.app.live), `kiosk ask` (its JSON), the evaluation's gate
outcomes (Assistant.verify on an assistant built, as kiosk.eval builds it, without back-off) and remembering
(a single author under best-match). Scores sit on a 0.01 grid and tau / margins half-way between grid points,
so float rounding of the cosines can never flip a comparison; ties are exact.

The bug this guards against: "my memories" once used a second copy of the rule that called a probe ambiguous
only when the runner-up also reached tau, so it opened for a probe the answer path refused.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from retrieval.reference import m_bio
from typer.testing import CliRunner

from kiosk.app.build import build_assistant
from kiosk.app.live import verification_for
from kiosk.app.memories import OwnMemories
from kiosk.assistant import Assistant
from kiosk.cli import app
from kiosk.config import KioskConfig
from kiosk.errors import ProbeError, StoreError
from kiosk.identity.gate import GatePolicy, GateRule, decide
from kiosk.identity.probe import Probe
from kiosk.memory import Note, SqliteStore, Store
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.memory.open import open_store
from kiosk.security.audit import AuditLog
from kiosk.security.backoff import no_backoff

SHA = "c" * 64
QUESTION = "What do you know about me?"


@dataclass(frozen=True)
class Case:
    scores: tuple[float, ...]  # user i+1's score
    tau: float
    policy: GatePolicy
    margin: float

    @property
    def rule(self) -> GateRule:
        return GateRule(self.tau, self.policy, self.margin)

    def expected(self) -> set[int]:
        """Whom the gate authorises for these scores (at most one person)."""
        user = decide(dict(enumerate(self.scores, start=1)), self.rule).verified_user_id
        return set() if user is None else {user}


HALF_GRID = st.integers(0, 98).map(lambda k: k / 100 + 0.005)
cases = st.builds(
    Case,
    scores=st.lists(st.integers(0, 99).map(lambda k: k / 100), min_size=1, max_size=4).map(tuple),
    tau=HALF_GRID,
    policy=st.sampled_from(["best-match", "threshold"]),
    margin=st.one_of(st.just(0.0), HALF_GRID.filter(lambda m: m < 0.3)),
)
REGRESSION = Case(scores=(0.70, 0.66), tau=0.685, policy="best-match", margin=0.055)
"""Best-match with the runner-up below tau but within the margin: nobody may be authorised, on any path."""


class FixedEncoder:
    """Every text is the same unit vector: retrieval runs, and no model is loaded."""

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        return np.tile(self.encode_one(""), (len(sentences), 1))

    def encode_one(self, sentence: str) -> np.ndarray:
        return np.eye(EMBEDDING_DIM, dtype=np.float32)[0]


def enrol(store: Store, scores: Sequence[float]) -> list[int]:
    """One user per score whose template scores exactly that against the probe e0, with one note each."""
    dim = len(scores) + 1
    ids = []
    for index, score in enumerate(scores, start=1):
        user = store.add_user(f"user-{index}")
        vector = np.zeros(dim, np.float32)
        vector[0], vector[index] = score, np.sqrt(1 - score**2)
        store.set_templates(user.id, "face", vector[None, :], SHA)
        store.add_note(
            Note(
                id=None,
                owner_id=user.id,
                modality="face",
                content=f"a note of user {index}",
                timestamp=datetime(2024, 1, 1, tzinfo=UTC),
                embedding=FixedEncoder().encode_one(""),
            )
        )
        ids.append(int(user.id))
    assert ids == list(range(1, len(scores) + 1))  # user i+1 has score i, as Case.expected assumes
    return ids


def probe_for(case: Case) -> Probe:
    return Probe("face", np.eye(len(case.scores) + 1, dtype=np.float32)[0], SHA, captured_at=0.0)


def configured(config: KioskConfig, case: Case) -> KioskConfig:
    copy = config.model_copy(deep=True)
    copy.gate.policy = case.policy
    copy.gate.best_match_margin = case.margin
    return copy


def authorised_by_memories(assistant: Assistant, probe: Probe, folder: Path) -> set[int]:
    memories = OwnMemories(assistant, AuditLog(folder, 100_000, 1), on_forgotten=lambda: None)
    verification = verification_for(assistant, probe)
    try:
        owner = memories.owner(verification)
    except ProbeError:
        with pytest.raises(ProbeError):
            memories.list_notes(verification)
        with pytest.raises(ProbeError):
            memories.forget_me(verification)
        with pytest.raises(ProbeError):
            memories.mark_note(verification, 1, "health")
        assert assistant.store.sensitive_note_ids(list(range(1, 6))) == set()
        return set()
    notes = memories.list_notes(verification)
    assert [note.content for note in notes] == [f"a note of user {owner}"]
    note_id = notes[0].id
    others = [user.id for user in assistant.store.list_users() if user.id != owner]
    for other in others:  # someone else's note: refused, whoever the gate authorised
        with pytest.raises(StoreError, match="not yours"):
            memories.mark_note(verification, assistant.store.list_notes(other)[0].id or 0, "health")
    memories.mark_note(verification, note_id, "health")
    assert [note.sensitivity for note in memories.list_notes(verification)] == ["health"]
    assert assistant.store.sensitive_note_ids([owner, *others]) == {note_id}
    memories.delete_note(verification, note_id)
    assert memories.list_notes(verification) == []
    memories.forget_me(verification)
    assert assistant.store.get_user(owner) is None
    return {owner}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases)
@example(case=REGRESSION)
def test_every_caller_authorises_the_person_the_gate_authorises(case: Case, config: KioskConfig) -> None:
    settings_ = configured(config, case)
    expected = case.expected()
    probe = probe_for(case)
    with SqliteStore(":memory:") as store, tempfile.TemporaryDirectory() as folder:
        enrol(store, case.scores)
        thresholds = {"face": case.tau}

        # The answer path.
        answered = build_assistant(settings_, store, FixedEncoder(), thresholds=thresholds).answer(QUESTION, probe)
        assert ({answered.identity.user_id} if answered.identity else set()) == expected
        assert {answered.gate.verified_user_id} - {None} == expected
        if case.policy == "best-match":
            assert set(answered.gate.matched_owner_ids) == expected
            assert {item.note.owner_id for item in answered.notes} == expected
        else:  # the paper's per-note formula decides which owners' notes are read
            templates = store.templates("face")
            per_note = {n.owner_id for n in _notes(store) if m_bio(n, probe.vector, "face", SHA, case.tau, templates)}
            assert set(answered.gate.matched_owner_ids) == per_note
            assert {item.note.owner_id for item in answered.notes} == per_note

        # The evaluation's gate outcomes: Assistant.verify on the assistant kiosk.eval builds (no back-off).
        evaluated = build_assistant(settings_, store, FixedEncoder(), thresholds=thresholds, backoff=no_backoff())
        assert {evaluated.verify(probe).verified_user_id} - {None} == expected
        assert evaluated.verify(probe).matched_owner_ids == answered.gate.matched_owner_ids

        # Remembering: a single author, best-match whatever the read policy.
        author = evaluated.identify(probe)
        single = decide(dict(enumerate(case.scores, start=1)), case.rule.single_author()).verified_user_id
        assert (author.user_id if author else None) == single
        if case.policy == "best-match":
            assert ({author.user_id} if author else set()) == expected

        # The kiosk's own memories: list, delete, forget me.
        kiosk = build_assistant(settings_, store, FixedEncoder(), thresholds=thresholds)
        assert authorised_by_memories(kiosk, probe, Path(folder)) == expected


def _notes(store: Store) -> list[Note]:
    return [note for user in store.list_users() for note in store.list_notes(int(user.id))]


@pytest.fixture()
def no_text_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("kiosk.text.load_text_encoder", lambda config: FixedEncoder())
    yield


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases)
@example(case=REGRESSION)
def test_kiosk_ask_authorises_the_person_the_gate_authorises(
    case: Case, config: KioskConfig, runner: CliRunner, no_text_model: None
) -> None:
    with tempfile.TemporaryDirectory() as home:
        settings_ = config.model_copy(deep=True)
        settings_.paths.data_dir = Path(home)
        with open_store(settings_) as store:
            enrol(store, case.scores)
        probe_file = Path(home) / "probe.npy"
        np.save(probe_file, probe_for(case).vector)
        env = {
            "KIOSK_HOME": home,
            "KIOSK_PATHS__MODELS_DIR": str(config.paths.models),
            "KIOSK_CONFIG": "",
            "KIOSK_GATE__BEST_MATCH_MARGIN": str(case.margin),
        }
        args = ["ask", QUESTION, "--probe-npy", str(probe_file), "--threshold", str(case.tau), "--policy", case.policy]
        result = runner.invoke(app, [*args, "--no-llm", "--json"], env=env)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    identity = payload["identity"]
    assert ({identity["user_id"]} if identity else set()) == case.expected()
    expected_matched = decide(dict(enumerate(case.scores, start=1)), case.rule).matched_owner_ids
    assert payload["gate"]["matched_owner_ids"] == list(expected_matched)
