"""The step-up collects a stronger probe (issue #38): when the asker's own private note is withheld, the live
service fuses a longer window of camera frames than a question's probe and asks again with it.

Fake frames: Alice's embeddings share her template direction (cosine 0.55 each), a session direction (same
lighting in every frame) and fresh per-frame noise, so fusing more frames scores her higher: five frames give
0.735, ten give 0.774 (the sensitive threshold here is 0.755; tau 0.6).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from doubles import BagOfWordsEncoder, ScriptedLLM

from kiosk.app.answers import Answers
from kiosk.app.live import STEP_UP_FRAMES, LiveCamera, longer_fusion, verification_for
from kiosk.app.views import Verification
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.identity.verify import FUSE_FRAMES, ProbeFuser
from kiosk.memory import Note, SqliteStore, Store
from kiosk.security.audit import AuditLog

SHA = "f" * 64
DIM = 96
ALICE, BOB, SESSION = 0, 1, 2
OWN, SHARED = 0.55, 0.3873  # cosine to the template; weight of the session direction (frames agree at 0.45)
ALLERGY = "I am allergic to penicillin, the doctor said"
QUESTION = "Am I allergic to penicillin?"
ANSWER = "Yes, to penicillin."
STEP_UP = "I have a private note about this. Look at the camera for a moment and ask again."


class Frames:
    """Embeddings of one person's successive frames: the noise direction of every frame is new."""

    def __init__(self, person: int) -> None:
        self.person = person
        self.count = 0

    def next(self) -> np.ndarray:
        vector = np.zeros(DIM, dtype=np.float32)
        vector[self.person] = OWN
        vector[SESSION] = SHARED
        vector[3 + (self.count + 40 * self.person) % (DIM - 3)] = np.sqrt(1 - OWN**2 - SHARED**2)
        self.count += 1
        return vector


def test_a_longer_window_fuses_more_frames_and_scores_the_owner_higher() -> None:
    fuser = ProbeFuser.for_modality("face", SHA)
    frames = Frames(ALICE)
    now = time.time()
    for index in range(20):  # two seconds at the kiosk's 10 analysed frames a second
        fuser.add(frames.next(), now - 1.95 + index * 0.1)
    usual = fuser.fuse(now).probe
    longer = longer_fusion(fuser, STEP_UP_FRAMES, 2.0, now).probe
    assert usual is not None and longer is not None
    assert (usual.frames, longer.frames) == (FUSE_FRAMES["face"], STEP_UP_FRAMES)
    assert float(usual.vector[ALICE]) == pytest.approx(0.735, abs=2e-3)
    assert float(longer.vector[ALICE]) == pytest.approx(0.774, abs=2e-3)


def test_a_longer_window_never_blends_in_the_previous_person() -> None:
    fuser = ProbeFuser.for_modality("face", SHA)
    alice, bob = Frames(ALICE), Frames(BOB)
    now = time.time()
    for index in range(10):
        fuser.add(bob.next() if index < 6 else alice.next(), now - 0.95 + index * 0.1)
    longer = longer_fusion(fuser, STEP_UP_FRAMES, 2.0, now).probe
    assert longer is not None and longer.frames == 4 and float(longer.vector[BOB]) == 0.0


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    opened = SqliteStore(tmp_path / "memory.db")
    yield opened
    opened.close()


def enrol(store: Store) -> dict[str, int]:
    ids = {}
    for name, axis in (("Alice", ALICE), ("Bob", BOB)):
        user = store.add_user(name)
        ids[name] = user.id
        store.set_templates(user.id, "face", np.eye(DIM, dtype=np.float32)[axis][None, :], SHA)
    note = Note(None, ids["Alice"], "face", ALLERGY, datetime(2024, 3, 1, tzinfo=UTC), sensitivity="health")
    note.embedding = BagOfWordsEncoder().encode_one(ALLERGY)
    store.add_note(note)
    return ids


class Camera:
    """Feeds one person's fake frames into the live fuser at 20 frames a second, like the verifier's thread."""

    def __init__(self, fuser: ProbeFuser, person: int) -> None:
        self.fuser = fuser
        self.frames = Frames(person)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.fuser.add(self.frames.next(), time.time())
            self._stop.wait(0.05)

    def __enter__(self) -> Camera:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def kiosk(store: Store, config: KioskConfig) -> tuple[Answers, LiveCamera]:
    config.sensitive.face_threshold = 0.755
    llm = ScriptedLLM({"penicillin, the doctor": ANSWER})
    assistant = Assistant(store, BagOfWordsEncoder(), llm, config, {"face": 0.6})
    assistant.retriever = assistant.retriever.retuned(replace(assistant.retriever.tuning, relevance_floor=0.5))
    face: Any = type("FakeFace", (), {"model_sha256": SHA, "analyse": None})()
    source: Any = object()  # never started: the test feeds the fuser directly
    live = LiveCamera(config, assistant, face, source, AuditLog(config.paths.data_dir))
    return Answers(config, assistant, live), live


def asked_by(answers: Answers, live: LiveCamera, person: int) -> Verification:
    """The question's own probe: the usual five-frame fusion of the asker's recent frames."""
    with Camera(live.fuser, person):
        time.sleep(0.4)
    probe = live.fuser.fuse().probe
    assert probe is not None and probe.frames == FUSE_FRAMES["face"]
    return verification_for(answers.assistant, probe)


def test_the_step_up_asks_again_with_a_longer_fused_probe(store: Store, config: KioskConfig) -> None:
    enrol(store)
    answers, live = kiosk(store, config)
    verification = asked_by(answers, live, ALICE)
    assert verification.presence.name == "Alice"
    live.fuser.clear()
    first = answers.assistant.answer(QUESTION, verification.probe)
    assert first.answer == STEP_UP  # the question's five-frame probe is below the sensitive threshold
    with Camera(live.fuser, ALICE):
        view = answers.answer(QUESTION, verification, lambda _token: None)
    assert view.text == ANSWER and view.step_up is None
    assert ALLERGY in [note.content for note in view.notes]


def test_no_second_answer_when_someone_else_steps_in(store: Store, config: KioskConfig) -> None:
    enrol(store)
    answers, live = kiosk(store, config)
    verification = asked_by(answers, live, ALICE)
    live.fuser.clear()
    with Camera(live.fuser, BOB):  # Bob now stands at the camera
        view = answers.answer(QUESTION, verification, lambda _token: None)
    assert view.text == STEP_UP and ALLERGY not in [note.content for note in view.notes]
