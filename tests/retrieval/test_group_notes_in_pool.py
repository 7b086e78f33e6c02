"""Issue #38 point 4: a group note that answers a member's question reaches her prompt ahead of her own unrelated
notes, while an equally relevant personal note still comes first.

Real text encoder, the kiosk's store (open_store: sealed at rest) and fast note construction through the assistant,
as on the terminal: two people, a group "family" with both as members, ten personal notes of Anna's (everyday
topics, several naming other people, several about Sunday or bringing something) and one group note by Tom.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kiosk.app.build import build_assistant
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.identity.probe import Probe
from kiosk.memory.open import open_store
from kiosk.memory.scopes import Scope
from kiosk.memory.store import Store

SHA = "c" * 64
TAU = 0.6
ANNA_FACE = np.eye(8, dtype=np.float32)[0]
TOM_FACE = np.eye(8, dtype=np.float32)[1]
START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)

ANNA_NOTES = [
    "Maria is coming over for lunch on Sunday",
    "Peter lent me his ladder to fix the gutter",
    "My dentist appointment moved to Thursday afternoon",
    "Sophie is bringing the drinks to the picnic",
    "The tomatoes in the garden are finally turning red",
    "David will pick up the kids from football on Sunday",
    "The car needs new tyres before the winter",
    "I watched a documentary about whales last night",
    "Julia recommended a new Italian restaurant downtown",
    "I have to renew my library card this month",
]
QUESTION = "Who is bringing the cake on Sunday?"
GROUP_NOTES = [
    "I'll bring the chocolate cake on Sunday",
    # Phrased for whoever asks: an instruction rule once took this for an order to the assistant and kept it out
    # of other members' prompts (fixed in kiosk/memory/instructions.py); it is information for the family.
    "If anyone asks, I'll bring the chocolate cake on Sunday",
]


@dataclass
class Family:
    assistant: Assistant
    store: Store


def probe(face: np.ndarray) -> Probe:
    noisy = face + 0.05 * np.ones_like(face)
    return Probe("face", noisy / np.linalg.norm(noisy), SHA, captured_at=0.0)


@pytest.fixture()
def family(config: KioskConfig, text_encoder: object) -> Iterator[Family]:
    config.memory.construction = "fast"
    with open_store(config) as store:
        anna = store.add_user("Anna")
        tom = store.add_user("Tom")
        store.set_templates(anna.id, "face", ANNA_FACE[None, :], SHA)
        store.set_templates(tom.id, "face", TOM_FACE[None, :], SHA)
        group = store.add_group("family")
        store.add_member(group.id, anna.id)
        store.add_member(group.id, tom.id)
        assistant = build_assistant(config, store, text_encoder, thresholds={"face": TAU})  # type: ignore[arg-type]
        for day, text in enumerate(ANNA_NOTES):
            assert assistant.remember(text, probe(ANNA_FACE), when=START + timedelta(days=day)) is not None
        yield Family(assistant, store)


def tom_says(family: Family, text: str) -> int:
    note_id = family.assistant.remember(
        text, probe(TOM_FACE), when=START + timedelta(days=11), scope=Scope("group", "family")
    )
    assert note_id is not None
    return note_id


@pytest.mark.real_models
@pytest.mark.parametrize("group_note", GROUP_NOTES)
def test_the_group_note_answering_the_question_outranks_unrelated_personal_notes(
    family: Family, group_note: str
) -> None:
    note_id = tom_says(family, group_note)
    decision, retrieval, _ = family.assistant.retrieve(QUESTION, probe(ANNA_FACE))
    assert decision.verified_user_id is not None
    assert len(retrieval.notes) == family.assistant.config.retrieval.k  # K of Anna's 11 notes: one is left out
    scores = {item.note.id: item.score for item in retrieval.notes}
    assert note_id in scores, "the group note is not in the top K"
    assert all(scores[note_id] > score for other, score in scores.items() if other != note_id)
    # ... and it reaches the answering prompt, marked as Tom's and in his name
    messages = family.assistant.prompt(QUESTION, retrieval, family.assistant.identity(decision))
    written = group_note.replace("I'll", "Tom will")
    assert f"(family group note by Tom — not the asker's) Tom: {written}" in messages[-1]["content"]


@pytest.mark.real_models
def test_an_equally_relevant_personal_note_still_comes_first(family: Family) -> None:
    group_note = tom_says(family, GROUP_NOTES[0])
    own = family.assistant.remember(GROUP_NOTES[0], probe(ANNA_FACE), when=START + timedelta(days=11))
    _, retrieval, _ = family.assistant.retrieve(QUESTION, probe(ANNA_FACE))
    ranked = [item.note.id for item in sorted(retrieval.notes, key=lambda item: -item.score)]
    assert ranked[:2] == [own, group_note]
