"""Issue #38 with the real face model and text encoder, at the shipped thresholds: tau from calibration/face-lfw.json
and the sensitive threshold from calibration/sensitive-face.json (chosen from fused multi-frame probes).

Two people are enrolled from three LFW3D crops each, as a family would. The owner's probe fused from several other
crops (the step-up's longer window) opens her health note; one crop of hers that the gate accepts but that is below
the sensitive threshold gets the step-up message, not "I don't know"; the other person, and a stranger, never see
the note or a hint of it. The LLM is scripted (the answer text is not what is tested here).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from doubles import ScriptedLLM

from kiosk.app.live import STEP_UP_FRAMES
from kiosk.assistant import Assistant
from kiosk.calibration.embed import load_image
from kiosk.calibration.sensitive import calibrated_sensitive_threshold
from kiosk.config import KioskConfig
from kiosk.identity.face import FaceEmbedder, load_face_embedder
from kiosk.identity.probe import Probe
from kiosk.memory import Note, SqliteStore

pytestmark = [pytest.mark.real_models, pytest.mark.real_data, pytest.mark.slow]

OWNER, OTHER, STRANGER = "Colin_Powell", "Tony_Blair", "Donald_Rumsfeld"
ENROL = 3
ALLERGY = "I am allergic to penicillin, the doctor told me after the rash last spring"
QUESTION = "Am I allergic to penicillin?"
ANSWER = "Yes, you are allergic to penicillin."
IDK = "I don't know."
OWN_NOTES = ["I walk the dog in the park every morning", "My sister lives in Lisbon"]
OTHER_NOTES = ["I repaired the garden fence on Saturday", "I like strong coffee"]


@pytest.fixture(scope="module")
def face(base_config: KioskConfig) -> FaceEmbedder:
    return load_face_embedder(base_config)


def crops(data_dir: Path, face: FaceEmbedder, name: str, count: int) -> np.ndarray:
    folder = data_dir / "lfw3d_frontalized" / "images" / name
    if not folder.is_dir():
        pytest.skip(f"LFW3D crops of {name} not found under {folder.parent}")
    images = [load_image(path) for path in sorted(folder.glob("*.jpg"))[:count]]
    vectors = face.embed_crops(images)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fused(face: FaceEmbedder, vectors: np.ndarray) -> Probe:
    mean = vectors.mean(axis=0)
    return Probe("face", mean / np.linalg.norm(mean), face.model_sha256, captured_at=0.0, frames=len(vectors))


def single(face: FaceEmbedder, vector: np.ndarray) -> Probe:
    return Probe("face", vector, face.model_sha256, captured_at=0.0)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "memory.db")
    yield opened
    opened.close()


def add_note(store: SqliteStore, encoder: Any, owner: int, text: str, day: int, sensitivity: str | None = None) -> None:
    note = Note(None, owner, "face", text, datetime(2024, 3, 1, tzinfo=UTC) + timedelta(days=day))
    note.sensitivity = sensitivity
    note.embedding = encoder.encode_one(text)
    store.add_note(note)


@pytest.fixture()
def family(
    store: SqliteStore, config: KioskConfig, data_dir: Path, face: FaceEmbedder, text_encoder: Any
) -> dict[str, Any]:
    sensitive = calibrated_sensitive_threshold(Path(config.paths.calibration_dir), "face", face.model_sha256)
    if sensitive is None:
        pytest.skip(
            f"no calibration/sensitive-face.json for face encoder sha256 {face.model_sha256[:12]}… "
            "(run .venv/bin/python -m bench.bench_sensitive_threshold)"
        )
    owner_crops = crops(data_dir, face, OWNER, 40)
    other_crops = crops(data_dir, face, OTHER, 12)
    ids = {}
    for name, vectors, notes in ((OWNER, owner_crops, OWN_NOTES), (OTHER, other_crops, OTHER_NOTES)):
        user = store.add_user(name)
        assert user.id is not None
        ids[name] = user.id
        store.set_templates(user.id, "face", vectors[:ENROL], face.model_sha256)
        for day, text in enumerate(notes):
            add_note(store, text_encoder, user.id, text, day)
    add_note(store, text_encoder, ids[OWNER], ALLERGY, 5, "health")
    llm = ScriptedLLM({"penicillin, the doctor": ANSWER}, default=IDK)
    assistant = Assistant(store, text_encoder, llm, config)  # tau from the shipped face calibration
    return {
        "assistant": assistant,
        "llm": llm,
        "sensitive": sensitive,
        "owner": owner_crops[ENROL:],
        "other": other_crops[ENROL:],
        "ids": ids,
    }


def test_the_owner_fused_from_several_frames_clears_her_sensitive_note(
    family: dict[str, Any], face: FaceEmbedder
) -> None:
    assistant: Assistant = family["assistant"]
    probe = fused(face, family["owner"][:STEP_UP_FRAMES])
    result = assistant.answer(QUESTION, probe)
    assert result.identity is not None and result.identity.name == OWNER
    assert result.scores[family["ids"][OWNER]] >= family["sensitive"]
    assert ALLERGY in [item.note.content for item in result.notes]
    assert result.answer == ANSWER


def test_a_single_weak_crop_gets_the_step_up_message_not_i_dont_know(
    family: dict[str, Any], face: FaceEmbedder
) -> None:
    assistant: Assistant = family["assistant"]
    owner = family["ids"][OWNER]
    weak = None
    for vector in family["owner"]:
        decision = assistant.verify(single(face, vector), record=False)
        if decision.verified_user_id == owner and decision.scores[owner] < family["sensitive"]:
            weak = single(face, vector)
            break
    assert weak is not None, "no crop of the owner passes the gate below the sensitive threshold"
    result = assistant.answer(QUESTION, weak)
    assert result.identity is not None and result.identity.name == OWNER
    assert ALLERGY not in [item.note.content for item in result.notes]
    assert result.answer.startswith("I have a private note about this.")
    assert result.answer != IDK
    step_up = result.as_dict()["step_up"]
    assert step_up["withheld"] == 1
    assert step_up["needs"] == f"score >= {family['sensitive']:.3f}"  # the shipped calibrated value, not tau + margin


@pytest.mark.parametrize("who", [OTHER, STRANGER])
def test_another_person_never_sees_the_note_or_a_hint_of_it(
    family: dict[str, Any], face: FaceEmbedder, data_dir: Path, who: str
) -> None:
    assistant: Assistant = family["assistant"]
    llm: ScriptedLLM = family["llm"]
    vectors = family["other"] if who == OTHER else crops(data_dir, face, STRANGER, STEP_UP_FRAMES)
    for probe in (fused(face, vectors[:STEP_UP_FRAMES]), single(face, vectors[0])):
        result = assistant.answer(QUESTION, probe)
        assert result.identity is None or result.identity.name == who
        assert ALLERGY not in [item.note.content for item in result.notes]
        payload = result.as_dict()
        assert payload["step_up"] is None and payload["withheld"] == 0
        assert "private note" not in result.answer and "penicillin" not in result.answer
        assert all("penicillin, the doctor" not in call.text for call in llm.calls)
