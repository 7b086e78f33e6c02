"""Sensitive notes need stronger verification: withheld below the stricter threshold, or without face + palm.

Real stores, both backends (SQLite + sqlite-vec, and PostgreSQL + pgvector through a terminal role under
row-level security); the probes' cosines to the enrolled templates are set exactly, so a probe can pass the
normal tau but not the sensitive threshold.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from doubles import BagOfWordsEncoder
from stores import BACKENDS, open_store

from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.errors import ConfigError, ProbeError
from kiosk.identity.probe import Probe
from kiosk.memory import Note, Store
from kiosk.retrieval import retriever
from kiosk.retrieval.sensitive import BELOW_STRICT, CLEARED, MISMATCH, NEEDS_BOTH

FACE_SHA = "f" * 64
PALM_SHA = "p" * 64
TAU = {"face": 0.6, "palm": 0.3}
AXES = {"Alice": 0, "Bob": 1}
NOISE_AXIS = 7

ALICE_NOTES = [
    ("Alice adopted a beagle puppy named Biscuit", None),
    ("Alice's doctor said the biopsy on her thyroid came back benign", "health"),
    ("Alice walks Biscuit to the doctor's park every morning", None),
]


def probe(modality: str, user: str, cosine: float) -> Probe:
    """A unit probe whose cosine to `user`'s template is exactly `cosine` (0 to everyone else's)."""
    vector = np.zeros(8, dtype=np.float32)
    vector[AXES[user]] = cosine
    vector[NOISE_AXIS] = np.sqrt(1.0 - cosine**2)
    sha = FACE_SHA if modality == "face" else PALM_SHA
    return Probe(modality, vector, sha, captured_at=0.0)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(request, tmp_path)
    yield opened
    opened.close()


@pytest.fixture()
def config(config: KioskConfig, monkeypatch: pytest.MonkeyPatch) -> KioskConfig:
    """The shipped relevance floor is calibrated on MiniLM's similarity scale, not the test encoders'; these tests
    are about the gate, so it is off here (tests/retrieval/test_relevance.py covers it with MiniLM)."""
    monkeypatch.setattr(retriever, "DEFAULT_TUNING", replace(retriever.DEFAULT_TUNING, relevance_floor=0.0))
    return config


@pytest.fixture()
def assistant(store: Store, config: KioskConfig) -> Assistant:
    encoder = BagOfWordsEncoder()
    start = datetime(2024, 3, 1, tzinfo=UTC)
    for name, axis in AXES.items():
        user = store.add_user(name)
        store.set_templates(user.id, "face", np.eye(8, dtype=np.float32)[axis][None, :], FACE_SHA)
        store.set_templates(user.id, "palm", np.eye(8, dtype=np.float32)[axis][None, :], PALM_SHA)
        if name == "Alice":
            for day, (text, sensitivity) in enumerate(ALICE_NOTES):
                note = Note(None, user.id, "face", text, start + timedelta(days=day), sensitivity=sensitivity)
                note.embedding = encoder.encode_one(text)
                store.add_note(note)
    config.sensitive.threshold_margin = 0.1
    return Assistant(store, encoder, None, config, thresholds=dict(TAU))


QUESTION = "What did my doctor say about the biopsy?"


def contents(assistant: Assistant, *probes: Probe | None) -> list[str]:
    second = probes[1] if len(probes) > 1 else None
    _, retrieval, _ = assistant.retrieve(QUESTION, probes[0], k=3, second_probe=second)
    return [item.note.content for item in retrieval.notes]


def test_probe_between_tau_and_the_strict_threshold_gets_everything_but_the_sensitive_note(
    assistant: Assistant,
) -> None:
    normal = probe("face", "Alice", 0.65)  # passes tau 0.6, not 0.7
    found = contents(assistant, normal)
    assert ALICE_NOTES[1][0] not in found
    assert ALICE_NOTES[0][0] in found and ALICE_NOTES[2][0] in found
    _, retrieval, _ = assistant.retrieve(QUESTION, normal, k=3)
    assert retrieval.clearance is not None and retrieval.clearance.reason == BELOW_STRICT
    assert retrieval.clearance.threshold == pytest.approx(0.7)
    assert retrieval.withheld_sensitive == 1  # the screen can say one memory needs more proof

    strong = probe("face", "Alice", 0.75)
    assert ALICE_NOTES[1][0] in contents(assistant, strong)


def test_the_answer_prompt_never_sees_a_withheld_note(assistant: Assistant) -> None:
    from doubles import ScriptedLLM

    llm = ScriptedLLM(default="ok")
    assistant.llm = llm
    result = assistant.answer(QUESTION, probe("face", "Alice", 0.65))
    assert result.decision == "owner"
    assert "thyroid" not in llm.calls[-1].text
    assert "Biscuit" in llm.calls[-1].text
    assert result.as_dict()["sensitive"]["withheld_in_top_k"] == 1


def test_absolute_sensitive_threshold_is_used_and_must_lie_above_tau(assistant: Assistant) -> None:
    assistant.config.sensitive.face_threshold = 0.9
    assert ALICE_NOTES[1][0] not in contents(assistant, probe("face", "Alice", 0.85))
    assert ALICE_NOTES[1][0] in contents(assistant, probe("face", "Alice", 0.95))
    assistant.config.sensitive.face_threshold = 0.5  # below tau 0.6: a mistake, not a weaker rule
    with pytest.raises(ConfigError, match="not above the face gate threshold"):
        contents(assistant, probe("face", "Alice", 0.95))


def test_face_and_palm_rule(assistant: Assistant) -> None:
    assistant.config.sensitive.verification = "face+palm"
    sensitive = ALICE_NOTES[1][0]
    face_only = probe("face", "Alice", 0.99)
    assert sensitive not in contents(assistant, face_only)
    _, retrieval, _ = assistant.retrieve(QUESTION, face_only, k=3)
    assert retrieval.clearance is not None and retrieval.clearance.reason == NEEDS_BOTH
    assert sensitive in contents(assistant, face_only, probe("palm", "Alice", 0.5))
    # A palm that verifies someone else, or nobody, clears nothing.
    _, retrieval, _ = assistant.retrieve(QUESTION, face_only, k=3, second_probe=probe("palm", "Bob", 0.5))
    assert retrieval.clearance is not None and retrieval.clearance.reason == MISMATCH
    assert sensitive not in [item.note.content for item in retrieval.notes]
    assert sensitive not in contents(assistant, face_only, probe("palm", "Alice", 0.2))
    # The palm alone as the first probe, face second: same person, cleared.
    _, retrieval, _ = assistant.retrieve(
        QUESTION, probe("palm", "Alice", 0.5), k=3, second_probe=probe("face", "Alice", 0.7)
    )
    assert retrieval.clearance is not None and retrieval.clearance.reason == CLEARED


def test_two_probes_of_one_modality_are_an_error(assistant: Assistant) -> None:
    with pytest.raises(ProbeError, match="both probes are face"):
        assistant.retrieve(QUESTION, probe("face", "Alice", 0.9), second_probe=probe("face", "Alice", 0.9))


def test_another_users_probe_never_reaches_the_sensitive_note(assistant: Assistant) -> None:
    assert contents(assistant, probe("face", "Bob", 0.99)) == []


def test_real_encoder_fast_construction_marks_and_withholds(
    store: Store, config: KioskConfig, text_encoder: object
) -> None:
    """Real MiniLM encoder and fast construction's rules: the classification feeds the gate end to end."""
    from kiosk.memory.build import Draft, NoteBuilder

    user = store.add_user("Dana")
    store.set_templates(user.id, "face", np.eye(8, dtype=np.float32)[0][None, :], FACE_SHA)
    builder = NoteBuilder(store, text_encoder, config.memory)  # type: ignore[arg-type]
    when = datetime(2024, 5, 1, tzinfo=UTC)
    sensitive = builder.build(Draft(user.id, "My bank PIN code is 4471, don't tell anyone", when), "fast")
    plain = builder.build(Draft(user.id, "I keep my bank statements in the blue folder", when), "fast")
    assert sensitive.note.sensitivity == "credentials" and sensitive.sensitivity_source == "rules"
    assert plain.note.sensitivity is None
    assistant = Assistant(store, text_encoder, None, config, thresholds={"face": 0.6})  # type: ignore[arg-type]
    AXES["Dana"] = 0
    try:
        weak = probe("face", "Dana", 0.65)
        _, retrieval, _ = assistant.retrieve("What is my bank PIN?", weak, k=2)
        assert [item.note.id for item in retrieval.notes] == [plain.note.id]
        _, retrieval, _ = assistant.retrieve("What is my bank PIN?", probe("face", "Dana", 0.8), k=2)
        assert sensitive.note.id in retrieval.note_ids
    finally:
        del AXES["Dana"]


def test_an_answer_from_a_sensitive_note_is_not_streamed_token_by_token(assistant: Assistant) -> None:
    from doubles import ScriptedLLM

    assistant.llm = ScriptedLLM(default="It came back benign.")
    pieces: list[str] = []
    result = assistant.answer(QUESTION, probe("face", "Alice", 0.8), stream=pieces.append)
    assert any(item.note.sensitive for item in result.notes)
    assert pieces == [] and result.answer == "It came back benign."  # shown whole, behind tap-to-reveal
    plain = assistant.answer("Who is Biscuit?", probe("face", "Alice", 0.65), stream=pieces.append)
    assert not any(item.note.sensitive for item in plain.notes) and pieces != []


@pytest.mark.parametrize(
    ("variable", "value", "setting"),
    [
        ("KIOSK_SENSITIVE__THRESHOLD_MARGIN", "0", "sensitive.threshold_margin"),
        ("KIOSK_SENSITIVE__VERIFICATION", '"palm-only"', "sensitive.verification"),
        ("KIOSK_MEMORY__CLASSIFY_SENSITIVE", '"maybe"', "memory.classify_sensitive"),
    ],
)
def test_bad_sensitive_settings_are_one_clear_line(tmp_path: Path, variable: str, value: str, setting: str) -> None:
    from kiosk.config import load_config

    empty = tmp_path / "kiosk.toml"
    empty.write_text("")
    with pytest.raises(ConfigError, match=f"setting '{setting}'"):
        load_config(empty, environ={variable: value})


FAMILY_DIAGNOSIS = "The family doctor said grandma's biopsy needs a second look"
PUBLIC_DIAGNOSIS = "The kiosk doctor reads biopsy results on Mondays"


def test_sensitive_group_and_public_notes_need_a_cleared_reader(assistant: Assistant, store: Store) -> None:
    encoder = BagOfWordsEncoder()
    alice, bob = store.user_by_name("Alice"), store.user_by_name("Bob")
    assert alice is not None and bob is not None
    family = store.add_group("family")
    store.add_member(family.id, alice.id)
    public = store.public_owner_id()
    stamp = datetime(2024, 3, 9, tzinfo=UTC)
    for owner, text in ((family.id, FAMILY_DIAGNOSIS), (public, PUBLIC_DIAGNOSIS)):
        note = Note(None, owner, "face", text, stamp, embedding=encoder.encode_one(text), sensitivity="health")
        store.add_note(note)

    def found(who: Probe | None) -> set[str]:
        _, retrieval, _ = assistant.retrieve(QUESTION, who, k=10)
        return {item.note.content for item in retrieval.notes}

    cleared = found(probe("face", "Alice", 0.8))  # above tau + 0.1: her group's and the public ones too
    assert {FAMILY_DIAGNOSIS, PUBLIC_DIAGNOSIS, ALICE_NOTES[1][0]} <= cleared
    weak = found(probe("face", "Alice", 0.65))  # passes tau only: no sensitive note of any scope
    assert not {FAMILY_DIAGNOSIS, PUBLIC_DIAGNOSIS, ALICE_NOTES[1][0]} & weak
    assert ALICE_NOTES[0][0] in weak
    bob_cleared = found(probe("face", "Bob", 0.8))  # cleared, but not a member: the public one only
    assert PUBLIC_DIAGNOSIS in bob_cleared and FAMILY_DIAGNOSIS not in bob_cleared
    assert not {PUBLIC_DIAGNOSIS, FAMILY_DIAGNOSIS} & found(None)  # nobody in view: nobody cleared
