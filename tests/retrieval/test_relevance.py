"""The relevance floor: notes none of which is about the question never reach the prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from doubles import ScriptedLLM

from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.identity.probe import Probe
from kiosk.llm.prompts import COMPACT_NO_MEMORY_SYSTEM, COMPACT_SYSTEM, UNKNOWN_ANSWER
from kiosk.memory import Note, SqliteStore
from kiosk.retrieval.relevance import apply_floor, best_similarity, calibration_path, derive_floor, load
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.thresholds import text_encoder_identity
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning

REPO = Path(__file__).resolve().parents[2]
SHA = "f" * 64


def _retrieval(*similarities: float) -> Retrieval:
    stamp = datetime(2024, 5, 1, tzinfo=UTC)
    notes = [ScoredNote(Note(i + 1, 1, "face", f"note {i}", stamp), sim, sim) for i, sim in enumerate(similarities)]
    return Retrieval("familiarity", notes)


def test_a_retrieval_whose_best_note_is_below_the_floor_is_emptied_and_marked() -> None:
    assert best_similarity(_retrieval()) is None
    low = apply_floor(_retrieval(0.2, 0.39), 0.4)
    assert low.notes == [] and low.below_relevance_floor
    kept = apply_floor(_retrieval(0.2, 0.41), 0.4)
    assert len(kept.notes) == 2 and not kept.below_relevance_floor  # one relevant note keeps the others
    empty = apply_floor(_retrieval(), 0.4)
    assert empty.notes == [] and not empty.below_relevance_floor  # nothing found is not "found but unrelated"


def test_the_floor_keeps_the_asked_share_of_related_questions() -> None:
    rng = np.random.default_rng(0)
    related, unrelated = rng.normal(0.55, 0.08, 4000), rng.normal(0.30, 0.08, 4000)
    floor, unrelated_kept = derive_floor(list(related), list(unrelated), kept=0.95)
    assert floor == pytest.approx(0.55 - 1.645 * 0.08, abs=0.01)
    assert np.mean(related >= floor) == pytest.approx(0.95, abs=0.01)
    assert unrelated_kept == pytest.approx(np.mean(unrelated >= floor), abs=1e-3)
    with pytest.raises(CalibrationError):
        derive_floor(list(related), [])
    with pytest.raises(CalibrationError):
        derive_floor(list(related), list(unrelated), kept=0.0)


def test_shipped_floor_is_the_default_and_belongs_to_the_default_encoder(base_config: KioskConfig) -> None:
    _, sha = text_encoder_identity(base_config)
    path = calibration_path(REPO / "calibration", sha)
    assert path.is_file(), f"no relevance calibration for the default text encoder: {path}"
    assert load(path, sha).floor == DEFAULT_TUNING.relevance_floor


def test_a_floor_calibrated_for_another_encoder_is_refused(base_config: KioskConfig, tmp_path: Path) -> None:
    _, sha = text_encoder_identity(base_config)
    payload = json.loads(calibration_path(REPO / "calibration", sha).read_text())
    payload["encoder_sha256"] = "0" * 64
    foreign = tmp_path / "relevance.json"
    foreign.write_text(json.dumps(payload))
    with pytest.raises(CalibrationError, match="made for encoder"):
        load(foreign, sha)
    foreign.write_text("[]")
    with pytest.raises(CalibrationError, match="unreadable"):
        load(foreign, sha)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "memory.db") as opened:
        yield opened


MEMORIES = [
    "I adopted a beagle puppy named Biscuit",
    "My sister Clara lives in Lisbon",
    "I have a dentist appointment next Thursday at 3pm",
    "My favourite food is ramen",
]


@pytest.mark.real_models
def test_real_encoder_keeps_first_person_questions_and_empties_unrelated_ones(
    store: SqliteStore, config: KioskConfig, text_encoder: object
) -> None:
    """MiniLM at the shipped floor: a kiosk question about something the person said keeps its notes; one about
    something they never mentioned gets no notes, and the LLM is asked without personal memory."""
    face = np.eye(8, dtype=np.float32)[0]
    user = store.add_user("Dana")
    store.set_templates(user.id, "face", face[None, :], SHA)
    for day, text in enumerate(MEMORIES, start=1):
        vector = text_encoder.encode_one(text)  # type: ignore[attr-defined]
        store.add_note(Note(None, user.id, "face", text, datetime(2024, 5, day, tzinfo=UTC), embedding=vector))
    llm = ScriptedLLM(default="I don't know")
    assistant = Assistant(store, text_encoder, llm, config, thresholds={"face": 0.5})  # type: ignore[arg-type]
    probe = Probe(modality="face", vector=face, model_sha256=SHA, captured_at=0.0)
    for question, expected in (
        ("What is my dog called?", MEMORIES[0]),
        ("Where does my sister live?", MEMORIES[1]),
        ("When is my appointment?", MEMORIES[2]),
        ("What food do I like?", MEMORIES[3]),
    ):
        result = assistant.answer(question, probe, k=2)
        assert expected in {item.note.content for item in result.notes}, question
        assert llm.calls[-1].messages[0]["content"] == COMPACT_SYSTEM
    for question in ("Which football team do I support?", "What is the name of my boss at work?"):
        calls_before = len(llm.calls)
        result = assistant.answer(question, probe, k=2)
        assert result.notes == [] and result.retrieval.below_relevance_floor, question
        assert result.as_dict()["below_relevance_floor"] is True
        # about the asker and no note about it: "I don't know" without asking the model
        assert result.answer == UNKNOWN_ANSWER and len(llm.calls) == calls_before
    assistant.answer("Which football team won the 1966 World Cup?", probe, k=2)
    assert llm.calls[-1].messages[0]["content"] == COMPACT_NO_MEMORY_SYSTEM
    assistant.retriever = assistant.retriever.retuned(RetrievalTuning(relevance_floor=0.0))
    assert assistant.answer("Which football team do I support?", probe, k=2).notes  # off: the nearest notes come
