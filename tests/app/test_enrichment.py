"""The kiosk's idle enrichment (ui.enrich_notes_when_idle): waits for a quiet terminal and gives way to people."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from doubles import ScriptedLLM

from kiosk.app.enrichment import IdleEnrichment
from kiosk.config import MemoryConfig
from kiosk.llm.locked import LockedLLM
from kiosk.memory import SqliteStore
from kiosk.memory.build import Draft, NoteBuilder
from kiosk.memory.enrichment import ENRICH_SYSTEM, Enricher, EnrichmentQueue, is_pending

ATTRS = json.dumps({"keywords": ["shed key"], "context": "Where the key is.", "tags": ["shed key"]})
NO_LINKS = json.dumps({"links": [], "neighbors": []})
WHEN = datetime(2026, 9, 7, 7, 30, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Encoder:
    def encode(self, sentences: Any) -> Any:
        import numpy as np

        from kiosk.memory import EMBEDDING_DIM

        out = np.ones((len(sentences), EMBEDDING_DIM), dtype=np.float32)
        for row, sentence in enumerate(sentences):
            out[row, len(sentence) % EMBEDDING_DIM] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "memory.db")


def remember(store: SqliteStore, owner: int, text: str, minutes: int) -> int:
    built = NoteBuilder(store, Encoder(), MemoryConfig(construction="fast")).build(
        Draft(owner, text, WHEN + timedelta(minutes=minutes), speaker="Ann")
    )
    return int(built.note.id or 0)


def idle_enrichment(store: SqliteStore, llm: ScriptedLLM, clock: Clock) -> IdleEnrichment:
    shared = LockedLLM(llm)
    return IdleEnrichment(EnrichmentQueue(Enricher(store, Encoder(), shared)), shared, idle_after_s=20.0, clock=clock)


def pending(store: SqliteStore, ids: list[int]) -> list[bool]:
    return [is_pending(note) for note in store.get_notes(ids)]


def test_nothing_runs_until_the_terminal_has_been_quiet(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    ids = [remember(store, ann, f"The shed key is in drawer {i}", i) for i in range(2)]
    clock = Clock()
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)
    idle = idle_enrichment(store, llm, clock)
    assert idle.step() == [] and not llm.calls  # just started
    clock.now += 19.0
    idle.touch()  # someone typed
    clock.now += 19.0
    assert idle.step() == [] and not llm.calls
    clock.now += 2.0
    assert [r.note_id for r in idle.step()] == ids
    assert pending(store, ids) == [False, False]


def test_someone_else_holding_the_llm_keeps_it_waiting(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    remember(store, ann, "The shed key is in the drawer", 0)
    clock = Clock()
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)
    idle = idle_enrichment(store, llm, clock)
    clock.now += 60.0
    with idle.llm.lock:  # an answer is streaming
        assert idle.busy() and idle.step() == []
    assert not llm.calls


def test_a_person_arriving_stops_it_after_the_note_in_progress(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    ids = [remember(store, ann, f"The shed key is in drawer {i}", i) for i in range(3)]
    clock = Clock()

    class PersonArrives(ScriptedLLM):
        def chat(self, messages: Any, **kwargs: Any) -> str:
            idle.touch()  # a question is sent while the first note is being enriched
            return super().chat(messages, **kwargs)

    llm = PersonArrives({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)
    idle = idle_enrichment(store, llm, clock)
    clock.now += 60.0
    assert [r.outcome for r in idle.step()] == ["enriched"]
    assert len(llm.calls) == 1 and pending(store, ids) == [False, True, True]


def test_a_note_remembered_while_it_runs_is_enriched_and_the_thread_stops_cleanly(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)
    shared = LockedLLM(llm)
    idle = IdleEnrichment(EnrichmentQueue(Enricher(store, Encoder(), shared)), shared, idle_after_s=0.0)
    idle.start()
    try:
        note_id = remember(store, ann, "The shed key is in the drawer", 0)
        idle.remembered(note_id)
        deadline = time.monotonic() + 20
        while pending(store, [note_id]) == [True] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pending(store, [note_id]) == [False]
    finally:
        idle.stop()
    assert idle._thread is not None and not idle._thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "note-enrichment"]
