"""Step-up, not silence (issue #38.1): the verified owner's own sensitive note that would answer the question, held
back because the probe is under the sensitive threshold, gives "I have a private note about this; look at the
camera…" instead of "I don't know"; a stronger probe gets the answer from it; anyone else gets exactly what they
got before, with no hint that the note exists.

Real stores (both backends); probes' cosines to the templates are set exactly (tau 0.6, sensitive 0.7).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from doubles import BagOfWordsEncoder, ScriptedLLM
from stores import BACKENDS, open_store

from kiosk.app.answers import Answers
from kiosk.app.views import Presence, Verification
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.identity.probe import Probe
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.memory import Note, Store

SHA = {"face": "f" * 64, "palm": "p" * 64}
TAU = {"face": 0.6, "palm": 0.3}
AXES = {"Alice": 0, "Bob": 1, "Stranger": 2}
NOISE_AXIS = 7
ALLERGY = "I am allergic to penicillin, the doctor said"
QUESTION = "Am I allergic to penicillin?"
ALICE_NOTES = ["I adopted a beagle puppy named Biscuit", "We walk in the park every morning"]
BOB_NOTES = ["Bob repaired the garden fence", "Bob likes strong coffee"]
PUBLIC_NOTE = "The terminal is cleaned on Mondays"
IDK = UNKNOWN_ANSWER  # what the double says, and what a question about the asker gets without notes
STEP_UP = "I have a private note about this. Look at the camera for a moment and ask again."


def probe(user: str, cosine: float, modality: str = "face") -> Probe:
    """A unit probe whose cosine to `user`'s template is exactly `cosine` (0 to everyone else's)."""
    vector = np.zeros(8, dtype=np.float32)
    vector[AXES[user]] = cosine
    vector[NOISE_AXIS] = np.sqrt(1.0 - cosine**2)
    return Probe(modality, vector, SHA[modality], captured_at=0.0)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(request, tmp_path)
    yield opened
    opened.close()


def add(store: Store, owner: int, text: str, day: int, sensitivity: str | None = None) -> None:
    stamp = datetime(2024, 3, 1, tzinfo=UTC) + timedelta(days=day)
    note = Note(None, owner, "face", text, stamp, sensitivity=sensitivity)
    note.embedding = BagOfWordsEncoder().encode_one(text)
    store.add_note(note)


@pytest.fixture()
def people(store: Store) -> dict[str, int]:
    ids = {}
    for name in ("Alice", "Bob"):
        user = store.add_user(name)
        ids[name] = user.id
        for modality in ("face", "palm"):
            store.set_templates(user.id, modality, np.eye(8, dtype=np.float32)[AXES[name]][None, :], SHA[modality])
    for day, text in enumerate(ALICE_NOTES):
        add(store, ids["Alice"], text, day)
    for day, text in enumerate(BOB_NOTES):
        add(store, ids["Bob"], text, day)
    public = store.public_owner_id()
    assert public is not None
    add(store, public, PUBLIC_NOTE, 0)
    return ids


def make(store: Store, config: KioskConfig, floor: float, llm: ScriptedLLM | None = None) -> Assistant:
    """A fresh assistant (empty caches); the relevance floor on the bag-of-words scale."""
    config.sensitive.threshold_margin = 0.1
    assistant = Assistant(store, BagOfWordsEncoder(), llm or ScriptedLLM(default=IDK), config, thresholds=dict(TAU))
    assistant.retriever = assistant.retriever.retuned(replace(assistant.retriever.tuning, relevance_floor=floor))
    return assistant


def test_weak_owner_probe_gets_the_step_up_message_not_i_dont_know(
    store: Store, people: dict[str, int], config: KioskConfig
) -> None:
    add(store, people["Alice"], ALLERGY, 5, "health")
    llm = ScriptedLLM(default=IDK)
    result = make(store, config, 0.5, llm).answer(QUESTION, probe("Alice", 0.65))
    assert result.decision == "owner" and result.notes == []  # the floor emptied the prompt, as before
    assert result.answer == STEP_UP
    assert llm.calls == []  # nothing asked of the model, so nothing of the note could leak through it
    payload = result.as_dict()
    assert payload["withheld"] == 1
    assert payload["step_up"] == {"withheld": 1, "needs": "score >= 0.700", "score": 0.65, "modality": "face"}
    assert "penicillin" not in str({key: value for key, value in payload.items() if key != "question"})


def test_strong_owner_probe_gets_the_answer_from_the_sensitive_note(
    store: Store, people: dict[str, int], config: KioskConfig
) -> None:
    add(store, people["Alice"], ALLERGY, 5, "health")
    llm = ScriptedLLM({"penicillin, the doctor": "Yes, to penicillin."}, default=IDK)
    result = make(store, config, 0.5, llm).answer(QUESTION, probe("Alice", 0.75))
    assert ALLERGY in [item.note.content for item in result.notes]
    assert result.answer == "Yes, to penicillin."
    assert result.as_dict()["step_up"] is None and result.as_dict()["withheld"] == 0


def test_no_step_up_without_a_matching_sensitive_note(
    store: Store, people: dict[str, int], config: KioskConfig
) -> None:
    add(store, people["Alice"], "My blood pressure medicine is taken at night", 5, "health")
    result = make(store, config, 0.5).answer(QUESTION, probe("Alice", 0.65))
    assert result.retrieval.step_up is None and result.answer == IDK


def test_other_notes_answer_as_before_with_the_step_up_hint(
    store: Store, people: dict[str, int], config: KioskConfig
) -> None:
    add(store, people["Alice"], ALLERGY, 5, "health")
    question = "Am I allergic to penicillin or to the beagle puppy Biscuit?"
    llm = ScriptedLLM(default="No.")
    result = make(store, config, 0.3, llm).answer(question, probe("Alice", 0.65))
    assert ALICE_NOTES[0] in [item.note.content for item in result.notes]
    assert ALLERGY not in llm.calls[-1].text
    assert result.answer == "No."
    assert result.as_dict()["step_up"]["withheld"] == 1  # the screen's "held back" line and the CLI's step-up line


def _seen_by(store: Store, config: KioskConfig, who: Probe | None) -> dict[str, Any]:
    result = make(store, config, 0.3, ScriptedLLM(default=IDK)).answer(QUESTION, who)
    payload = result.as_dict()
    payload.pop("timings_ms")
    return payload


@pytest.mark.parametrize("who", ["Bob", "Stranger", None])
def test_anyone_else_gets_exactly_what_they_got_before(
    store: Store, people: dict[str, int], config: KioskConfig, who: str | None
) -> None:
    asker = probe(who, 0.99) if who is not None else None
    before = _seen_by(store, config, asker)
    add(store, people["Alice"], ALLERGY, 5, "health")
    after = _seen_by(store, config, asker)
    assert after == before
    assert after["step_up"] is None
    assert "private note" not in after["answer"]


def test_group_note_steps_up_for_a_member_only(store: Store, people: dict[str, int], config: KioskConfig) -> None:
    family = store.add_group("family")
    store.add_member(family.id, people["Alice"])
    add(store, family.id, ALLERGY, 5, "health")
    assert make(store, config, 0.5).answer(QUESTION, probe("Alice", 0.65)).answer == STEP_UP
    bob = make(store, config, 0.5).answer(QUESTION, probe("Bob", 0.65))
    assert bob.answer == IDK and bob.retrieval.step_up is None


def test_wording_follows_the_terminal(store: Store, people: dict[str, int], config: KioskConfig) -> None:
    add(store, people["Alice"], ALLERGY, 5, "health")
    config.capture.palm_source = "1"
    result = make(store, config, 0.5).answer(QUESTION, probe("Alice", 0.65))
    assert "(or put your palm on the scanner)" in result.answer
    config.capture.palm_source = None
    config.sensitive.verification = "face+palm"
    result = make(store, config, 0.5).answer(QUESTION, probe("Alice", 0.65))
    assert "put your palm on the scanner" in result.answer
    assert result.as_dict()["step_up"]["needs"] == "face+palm"
    cleared = make(store, config, 0.5).answer(QUESTION, probe("Alice", 0.65), second_probe=probe("Alice", 0.9, "palm"))
    assert ALLERGY in [item.note.content for item in cleared.notes]


def test_the_answer_view_carries_the_step_up(store: Store, people: dict[str, int], config: KioskConfig) -> None:
    add(store, people["Alice"], ALLERGY, 5, "health")
    assistant = make(store, config, 0.5)
    asker = probe("Alice", 0.65)
    view = Answers(config, assistant, None).answer(  # type: ignore[arg-type]
        QUESTION, Verification(Presence("recognised"), asker), lambda _token: None
    )
    assert view.text == STEP_UP
    assert view.step_up == "look at the camera for a moment and ask again"
    assert view.withheld_sensitive == 1
