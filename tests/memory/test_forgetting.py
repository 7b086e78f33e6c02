"""Forgetting without losing: the strength formula, reinforcement, and the archive round trip on the real store
(every test taking `store` runs on SQLite and on PostgreSQL, tests/memory/conftest.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from kiosk.config import ForgettingConfig, RetrievalConfig, load_config
from kiosk.errors import ConfigError, DataError, StoreError
from kiosk.memory import SqliteStore, Store
from kiosk.memory.forgetting import Decay, archive_faded, check_floor, note_strengths, pool_strengths
from kiosk.retrieval import Retriever
from kiosk.retrieval.ranking import ScopeWeights
from kiosk.retrieval.tuning import RetrievalTuning

from .builders import make_note, unit

UNCACHED = RetrievalTuning(cache_ttl_ms=0)

DAY = 86_400.0
NOTE_TIME = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # make_note's timestamp


def test_strength_halves_every_half_life_and_starts_at_one() -> None:
    decay = Decay(half_life_days=30.0, growth=2.0)
    values = decay.strength(np.array([0.0, 30 * DAY, 60 * DAY, -5 * DAY]), 0)
    assert np.allclose(values, [1.0, 0.5, 0.25, 1.0])
    assert math.isclose(float(decay.strength(10 * DAY, 0)), math.exp(-10 * math.log(2) / 30))


def test_a_reinforced_memory_decays_more_slowly_up_to_the_cap() -> None:
    decay = Decay(half_life_days=30.0, growth=2.0, max_half_life_days=100.0)
    assert np.allclose(decay.half_life_s(np.array([0, 1, 2, 3, 500])) / DAY, [30, 60, 100, 100, 100])
    week = 7 * DAY
    strengths = decay.strength(np.full(3, week), np.array([0, 1, 2]))
    assert strengths[0] < strengths[1] < strengths[2] < 1.0
    assert math.isclose(float(strengths[1]), 0.5 ** (7 / 60))


@pytest.mark.parametrize("half_life", [0.0, -3.0, float("nan"), float("inf")])
def test_a_half_life_of_zero_or_less_is_a_clear_error(half_life: float) -> None:
    with pytest.raises(DataError, match="half-life must be a positive number of days"):
        Decay(half_life_days=half_life)


def test_bad_decay_settings_are_clear_errors() -> None:
    with pytest.raises(DataError, match="growth must be >= 1"):
        Decay(30.0, growth=0.5)
    with pytest.raises(DataError, match="floor must be in"):
        check_floor(1.5)
    for value in ("0", "-1"):
        with pytest.raises(ConfigError, match=r"forgetting\.half_life_days"):
            load_config(path=None, environ={"KIOSK_FORGETTING__HALF_LIFE_DAYS": value, "KIOSK_CONFIG": ""})


def test_decay_archive_restore_round_trip(store: Store) -> None:
    ann = store.add_user("Ann").id
    old = store.add_note(make_note(ann, "said long ago", seed=1))
    fresh = store.add_note(make_note(ann, "said yesterday", seed=2, minutes=364 * 24 * 60))
    used = store.add_note(make_note(ann, "said long ago but used last month", seed=3))
    now = NOTE_TIME + timedelta(days=365)
    store.reinforce([int(used.id or 0)], now - timedelta(days=30))
    decay = Decay(half_life_days=60.0, growth=2.0)

    strengths = pool_strengths(store, [ann], now, decay)
    assert strengths[int(old.id or 0)] == pytest.approx(0.5 ** (365 / 60))
    assert strengths[int(used.id or 0)] == pytest.approx(0.5 ** (30 / 120))  # reinforced once: half-life 120 d
    assert strengths[int(fresh.id or 0)] > 0.98

    assert archive_faded(store, [ann], now, decay, floor=0.05) == [old.id]
    # out of retrieval: neither the vector index nor the in-memory pool nor the retriever sees it
    assert old.id not in {i for i, _ in store.knn([ann], unit(1), 10)}
    assert old.id not in set(store.owner_matrix([ann])[0].tolist())
    retriever = Retriever(store, RetrievalConfig(), tuning=UNCACHED)
    assert old.id not in retriever.retrieve([ann], unit(1), "q", k=10).note_ids
    # not lost: still listed, marked, with its content, and nothing else moved
    listed = {n.id: n for n in store.list_notes(ann)}
    assert listed[old.id].archived and listed[old.id].content == "said long ago"
    assert not listed[fresh.id].archived and store.count_notes(ann) == 3
    assert archive_faded(store, [ann], now, decay, floor=0.05) == []  # idempotent

    restored = store.restore_note(int(old.id or 0), now)
    assert not restored.archived and restored.last_used_at == now
    assert store.knn([ann], unit(1), 1)[0][0] == old.id
    assert retriever.retrieve([ann], unit(1), "q", k=1).note_ids == [old.id]
    assert pool_strengths(store, [ann], now, decay)[int(old.id or 0)] == pytest.approx(1.0)


def test_reinforcement_counts_uses_and_skips_archived_notes(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "a", seed=1))
    archived = store.add_note(make_note(ann, "b", seed=2))
    when = NOTE_TIME + timedelta(days=3)
    store.archive_notes([int(archived.id or 0)], when)
    store.reinforce([int(note.id or 0), int(archived.id or 0)], when)
    store.reinforce([int(note.id or 0)], when - timedelta(days=1))  # a late, older use never moves time back
    got = store.get_note(int(note.id or 0))
    assert got is not None and got.reinforcements == 2 and got.last_used_at == when
    untouched = store.get_note(int(archived.id or 0))
    assert untouched is not None and untouched.reinforcements == 0 and untouched.last_used_at is None
    assert store.history(int(note.id or 0)) == []  # a use is not an edit


def test_updating_an_archived_note_keeps_it_out_of_the_index(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "a", seed=1))
    store.archive_notes([int(note.id or 0)], NOTE_TIME)
    archived = store.get_note(int(note.id or 0))
    assert archived is not None
    archived.embedding = unit(5)
    store.update_note(archived, reason="edit")
    assert store.knn([ann], unit(5), 5) == []
    store.restore_note(int(note.id or 0), NOTE_TIME)
    assert store.knn([ann], unit(5), 1)[0][0] == note.id


def test_an_archived_note_leaves_the_lexical_index_and_restoring_brings_it_back(store: Store) -> None:
    ann = store.add_user("Ann").id
    kayak = store.add_note(make_note(ann, "we took the kayak to the lighthouse", seed=1))
    other = store.add_note(make_note(ann, "a kayak race in town", seed=2))
    kayak_id = int(kayak.id or 0)
    keyword_only = Retriever(store, RetrievalConfig(), tuning=replace(UNCACHED, dense_weight=0.0))
    assert {i for i, _ in store.lexical([ann], "kayak lighthouse", 10)} == {kayak_id, other.id}

    store.archive_notes([kayak_id], NOTE_TIME)
    assert [i for i, _ in store.lexical([ann], "kayak lighthouse", 10)] == [other.id]
    assert store.lexical([ann], "lighthouse", 10) == []
    assert keyword_only.retrieve([ann], unit(1), "the lighthouse", k=5).note_ids == []
    archived = store.get_note(kayak_id)
    assert archived is not None
    archived.content = "we took the kayak to the old lighthouse"
    store.update_note(archived, reason="edit")  # an edit while archived does not re-index it either
    assert store.lexical([ann], "lighthouse", 10) == []

    store.restore_note(kayak_id, NOTE_TIME)
    assert [i for i, _ in store.lexical([ann], "lighthouse", 10)] == [kayak_id]
    assert keyword_only.retrieve([ann], unit(1), "the old lighthouse", k=5).note_ids == [kayak_id]


def test_strength_weight_prefers_the_fresh_note_among_equals(store: Store) -> None:
    ann = store.add_user("Ann").id
    old = store.add_note(make_note(ann, "old", seed=1))
    new = store.add_note(make_note(ann, "new", seed=1, minutes=60 * 24 * 300))
    now = NOTE_TIME + timedelta(days=301)
    familiarity, dense = RetrievalConfig(), replace(UNCACHED, fusion="off")
    plain = Retriever(store, familiarity, tuning=dense)
    forgetting = ForgettingConfig(weight=0.1, half_life_days=30)
    decaying = Retriever(store, familiarity, ScopeWeights(), forgetting, dense)
    assert plain.retrieve([ann], unit(1), "q", k=1).note_ids == [old.id]  # equal cosine: the lower id
    result = decaying.retrieve([ann], unit(1), "q", k=1, now=now)
    assert result.note_ids == [new.id]
    decay = Decay(30.0)
    strength = float(note_strengths([new], now, decay)[0])
    assert result.notes[0].score == pytest.approx(1.0 + 0.05 * 1.0 + 0.1 * strength, abs=1e-5)
    # Fused (the default): the fused score in [0, 1] takes cosine's place and the strength term still counts.
    fused = Retriever(store, familiarity, ScopeWeights(), forgetting, UNCACHED)
    assert Retriever(store, familiarity, tuning=UNCACHED).retrieve([ann], unit(1), "q", k=1).note_ids == [old.id]
    result = fused.retrieve([ann], unit(1), "q", k=1, now=now)
    assert result.note_ids == [new.id]
    assert result.notes[0].score == pytest.approx(1.0 + 0.05 * 1.0 + 0.1 * strength, abs=1e-5)


def test_a_v1_database_upgrades_to_scopes_with_its_notes_personal_and_active(tmp_path: Path) -> None:
    import apsw
    import sqlite_vec

    from kiosk.memory.schema import MIGRATIONS

    path = tmp_path / "memory.db"
    old = apsw.Connection(str(path))  # a database as the version-1 build left it
    old.enable_load_extension(True)
    old.load_extension(sqlite_vec.loadable_path())
    MIGRATIONS[0](old)
    old.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1)")
    old.execute("INSERT INTO users (id, name, created_at) VALUES (1, 'Ann', 0)")
    vector = unit(4).tobytes()
    old.execute(
        "INSERT INTO notes (id, owner_id, modality, content, timestamp, embedding, source, created_at, updated_at) "
        "VALUES (1, 1, 'face', 'from before scopes', 1.7e9, ?, 'chat', 0, 0)",
        (vector,),
    )
    old.execute("INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (1, 1, ?)", (vector,))
    old.close()
    with SqliteStore(path) as upgraded:
        note = upgraded.get_note(1)
        assert note is not None and note.scope == "personal" and not note.archived
        assert note.reinforcements == 0 and note.last_used_at is None and note.author_id is None
        assert upgraded.knn([1], unit(4), 1)[0][0] == 1
        assert upgraded.list_groups() == [] and [u.name for u in upgraded.list_users()] == ["Ann"]
        assert list(tmp_path.glob("memory.db.v1-*.bak"))  # backed up before migrating


def test_restoring_a_missing_or_active_note_is_a_clear_error_and_changes_nothing(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "still here", seed=1))
    with pytest.raises(StoreError, match="is not archived"):
        store.restore_note(int(note.id or 0), NOTE_TIME)
    with pytest.raises(StoreError, match="no note with id 999"):
        store.restore_note(999, NOTE_TIME)
    assert store.archive_notes([], NOTE_TIME) == 0 and store.archive_notes([999], NOTE_TIME) == 0
    assert store.archive_notes([int(note.id or 0)] * 2, NOTE_TIME) == 1  # an id twice archives once
    assert store.archive_notes([int(note.id or 0)], NOTE_TIME) == 0  # already archived
    assert [n.content for n in store.list_notes(ann)] == ["still here"]
