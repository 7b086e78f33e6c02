"""Sensitive-note classification: rules, the LLM step, storage, construction, and its migration (schema v4)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest
from doubles import ScriptedLLM

from kiosk.config import KioskConfig
from kiosk.errors import DataError, StoreError
from kiosk.memory import SqliteStore, Store
from kiosk.memory.build import Draft, NoteBuilder
from kiosk.memory.schema import LATEST_VERSION, MIGRATIONS
from kiosk.memory.sensitivity import CATEGORIES, classify_rules, validate_category

from .builders import make_note, unit

LABELS = Path(__file__).resolve().parents[2] / "bench" / "labels" / "sensitive_locomo200.csv"


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("The wifi password is tulip-7781", "credentials"),
        ("My PIN code for the garage door is 0420", "credentials"),
        ("The doctor said my blood pressure is too high", "health"),
        ("I'm allergic to peanuts, so no satay for me", "health"),
        ("I hurt my ankle last season and needed physical therapy", "health"),
        ("My salary went up to $4,200 a month", "finance"),
        ("We still owe the bank on the mortgage", "finance"),
        ("I live at 14 Rosewood Lane, the blue door", "location"),
        ("Our new place: 221 Baker Street, flat 2", "location"),
        ("My brother got arrested last weekend", "third_party"),
        ("Sorry for your loss, I heard your grandpa passed away", "third_party"),
        ("The code for the shed is 2468 now", "credentials"),
        ("The spare key is under the blue pot", "credentials"),
        ("My GP put me on citalopram", "health"),
        ("I take 20 mg of it every morning", "health"),
        ("The dentist moved me to Friday at 9", "health"),
        ("No grapefruit while I'm on warfarin", "health"),
        ("The water bill was 1,200 kronor this quarter", "finance"),
        ("The school trip is 40 euro, pay by Monday", "finance"),
        ("I'm at Anna's tonight, Ekvägen 12", "location"),
        ("My flat is at Calle Mayor 3, second floor", "location"),
        ("The pharmacy closes at eight on weekdays", None),
        ("The guest wifi needs no password", None),
        ("I went hiking with my dogs on Saturday", None),
        ("Gaming is like therapy for me", None),
        ("This new spot has a sick view", None),
        ("I noticed a spiderman pin on your purse", None),
        ("All the hard work paid off!", None),
    ],
)
def test_rules(text: str, category: str | None) -> None:
    assert classify_rules(text) == category


def test_first_category_wins_in_a_fixed_order() -> None:
    assert classify_rules("My doctor's bill was $900") == "health"  # health before finance
    assert classify_rules("The password to my health portal is x1") == "credentials"


def test_unknown_category_is_a_clear_error() -> None:
    assert validate_category("none") is None and validate_category(None) is None
    assert validate_category("health") == "health"
    with pytest.raises(DataError, match="unknown sensitivity 'helth'"):
        validate_category("helth")


def test_store_roundtrip_update_history_and_bad_value(store: Store) -> None:
    """On both backends (tests/memory/conftest.py)."""
    owner = store.add_user("Ann").id
    plain = store.add_note(make_note(owner, "a walk in the park", seed=1))
    marked = store.add_note(make_note(owner, "my PIN is 1234", seed=2, sensitivity="credentials"))
    assert store.get_note(marked.id or 0).sensitivity == "credentials"  # type: ignore[union-attr]
    assert store.sensitive_note_ids([owner]) == {marked.id}
    plain.sensitivity = "health"
    store.update_note(plain, reason="user marked it")
    assert store.sensitive_note_ids([owner]) == {marked.id, plain.id}
    assert store.history(plain.id or 0)[-1].after == {"sensitivity": "health"}
    with pytest.raises(StoreError, match="unknown sensitivity 'secret'"):
        store.add_note(make_note(owner, "x", seed=3, sensitivity="secret"))
    assert store.count_notes(owner) == 2
    assert store.sensitive_note_ids([owner + 1]) == set()


def test_sensitivity_migration_upgrades_a_v1_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    import sqlite_vec

    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    MIGRATIONS[0](conn)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1)")
    conn.execute("INSERT INTO users (name, created_at) VALUES ('Ann', 0)")
    conn.execute(
        "INSERT INTO notes (owner_id, modality, content, timestamp, embedding, source, created_at, updated_at) "
        "VALUES (1, 'face', 'old note', 0, ?, 'chat', 0, 0)",
        (unit(0).tobytes(),),
    )
    conn.close()
    with SqliteStore(path) as store:
        assert store.schema_version() == LATEST_VERSION
        (old,) = store.list_notes(1)
        assert old.content == "old note" and old.sensitivity is None
    assert list(tmp_path.glob("old.db.v1-*.bak"))


def test_fast_construction_marks_by_rules_and_can_be_turned_off(tmp_path: Path, config: KioskConfig) -> None:
    class Encoder:
        def encode(self, sentences: list[str]) -> np.ndarray:
            return np.stack([unit(len(s)) for s in sentences])

    with SqliteStore(tmp_path / "memory.db") as store:
        owner = store.add_user("Ann").id
        builder = NoteBuilder(store, Encoder(), config.memory)
        when = datetime(2024, 1, 1, tzinfo=UTC)
        report = builder.build(Draft(owner, "My therapist says my anxiety is better", when), "fast")
        assert report.note.sensitivity == "health" and report.as_dict()["sensitivity_source"] == "rules"
        config.memory.classify_sensitive = False
        off = NoteBuilder(store, Encoder(), config.memory).build(Draft(owner, "My anxiety is back", when), "fast")
        assert off.note.sensitivity is None


def test_llm_construction_marks_by_rules_without_asking_the_llm(tmp_path: Path, config: KioskConfig) -> None:
    class Encoder:
        def encode(self, sentences: list[str]) -> np.ndarray:
            return np.stack([unit(len(s)) for s in sentences])

    attributes = json.dumps({"keywords": ["knee"], "context": "Ann talks about her knee.", "tags": ["body"]})
    llm = ScriptedLLM(default=attributes)
    with SqliteStore(tmp_path / "memory.db") as store:
        owner = store.add_user("Ann").id
        when = datetime(2024, 1, 1, tzinfo=UTC)
        builder = NoteBuilder(store, Encoder(), config.memory, llm)
        unmarked = builder.build(Draft(owner, "The knee swells every night since the fall", when), "llm")
        assert unmarked.note.sensitivity is None and unmarked.sensitivity_source is None
        marked = builder.build(Draft(owner, "My doctor said it's a sprain", when), "llm")
        assert marked.note.sensitivity == "health" and marked.sensitivity_source == "rules"
        assert not any("private information" in call.text for call in llm.calls)  # only construction prompts
        assert store.sensitive_note_ids([owner]) == {marked.note.id}


def test_rules_on_the_hand_labelled_locomo_turns(data_dir: Path) -> None:
    """Real data: the rules on the 200 labelled LoCoMo turns (fitted on them: a floor, not a measurement;
    bench/results/sensitive.md has the figures)."""
    from bench.sensitive_sample import draw, load_turns

    turns = draw(load_turns(data_dir / "locomo" / "locomo10.json"))
    with LABELS.open(encoding="utf-8") as handle:
        labels = {row["key"]: row["label"] for row in csv.DictReader(handle)}
    assert [t.key for t in turns] == list(labels)  # the sample is reproducible from the seed
    assert set(labels.values()) <= {"none", *CATEGORIES}
    predicted = {t.key: classify_rules(t.text) for t in turns}
    tp = sum(1 for k, y in labels.items() if y != "none" and predicted[k])
    fp = sum(1 for k, y in labels.items() if y == "none" and predicted[k])
    positives = sum(1 for y in labels.values() if y != "none")
    assert tp / positives >= 0.8 and tp / (tp + fp) >= 0.8


def test_sensitivity_survives_a_sealed_store(tmp_path: Path) -> None:
    from kiosk.security.sealing import MasterKey, new_key

    master = MasterKey(new_key(), "test")
    with SqliteStore(tmp_path / "memory.db", master_key=master) as store:
        owner = store.add_user("Ann").id
        marked = store.add_note(make_note(owner, "my PIN is 1234", seed=2, sensitivity="credentials"))
        store.add_note(make_note(owner, "a walk", seed=3))
    with SqliteStore(tmp_path / "memory.db", master_key=master) as reopened:
        assert reopened.get_note(marked.id or 0).sensitivity == "credentials"  # type: ignore[union-attr]
        assert reopened.sensitive_note_ids([owner]) == {marked.id}
