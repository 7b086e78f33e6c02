"""Two imports of one conversation file at once store each turn once (issue #34, point 5).

Both processes read the owner's stored source references before either writes, so without a unique
(owner, source reference) in the store every turn was stored twice (837 notes for LoCoMo's 419 turns).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory.builders import count_rows, make_note
from stores import BACKENDS, open_store

from kiosk.config import KioskConfig, SecurityConfig
from kiosk.errors import DuplicateNote
from kiosk.memory import SqliteStore, Store
from kiosk.memory.note import Note
from kiosk.security.sealing import master_key_for

TURNS = 120


def locomo_file(path: Path, turns: int = TURNS) -> Path:
    """One LoCoMo-shaped conversation of `turns` turns over three sessions."""
    conversation: dict[str, object] = {"speaker_a": "Ann", "speaker_b": "Bob"}
    per_session = turns // 3
    for session in range(1, 4):
        conversation[f"session_{session}_date_time"] = f"1:56 pm on {session + 7} May, 2023"
        conversation[f"session_{session}"] = [
            {
                "speaker": "Ann" if i % 2 == 0 else "Bob",
                "dia_id": f"D{session}:{i + 1}",
                "text": f"Turn {i + 1} of session {session}: we talked about walk number {session * 100 + i}.",
            }
            for i in range(per_session)
        ]
    path.write_text(json.dumps([{"sample_id": "conv-z", "conversation": conversation}]), encoding="utf-8")
    return path


def _env(home: Path, base_config: KioskConfig) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"}
    env.update(KIOSK_HOME=str(home), KIOSK_PATHS__MODELS_DIR=str(base_config.paths.models))
    return env


@pytest.mark.real_models
def test_two_processes_importing_one_file_at_once_store_each_turn_once(
    tmp_path: Path, base_config: KioskConfig
) -> None:
    env = _env(tmp_path, base_config)
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        ann = store.add_user("Ann").id
    path = locomo_file(tmp_path / "conv.json")
    command = [sys.executable, "-m", "kiosk", "memory", "import", str(path), "--user", "Ann", "--construct", "fast"]
    running = [
        subprocess.Popen([*command, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=300) for process in running]
    for process, (_, err) in zip(running, outputs, strict=True):
        assert process.returncode == 0, err.decode()
    reports = [json.loads(out) for out, _ in outputs]
    assert sum(r["added"] for r in reports) == TURNS and sum(r["skipped"] for r in reports) == TURNS

    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        refs = Counter(n.source_ref for n in store.list_notes(ann))
        assert store.count_notes(ann) == TURNS and max(refs.values()) == 1
        assert len(store.lexical([ann], "walk", 1000)) == TURNS


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(request, tmp_path)
    yield opened
    opened.close()


def test_the_store_refuses_a_second_note_from_one_source_reference(any_store: Store) -> None:
    with any_store as store:
        ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
        first = store.add_note(_note(ann, "D1:1", seed=1))
        with pytest.raises(DuplicateNote, match="already has note") as refused:
            store.add_note(_note(ann, "D1:1", seed=2))
        assert refused.value.note_id == first.id
        store.add_note(_note(bob, "D1:1", seed=3))  # another owner's reference is theirs
        store.add_note(_note(ann, None, seed=4))  # notes said at the kiosk have none
        store.add_note(_note(ann, None, seed=5))
        assert store.count_notes(ann) == 3 and store.knn([ann], _note(ann, None, seed=2).embedding, 5)


def test_migration_keeps_the_first_of_each_duplicate_and_every_distinct_note(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SqliteStore(path) as store:  # a database as concurrent imports left it before schema 6
        store._conn.execute(
            "DROP INDEX notes_by_source_ref; CREATE INDEX notes_by_source_ref ON notes(owner_id, source_ref); "
            "UPDATE schema_version SET version = 5"
        )
        ann = store.add_user("Ann").id
        kept = store.add_note(_note(ann, "D1:1", seed=1, content="We moved to Lisbon."))
        doubled = store.add_note(_note(ann, "D1:1", seed=1, content="We moved to Lisbon."))
        other = store.add_note(_note(ann, "D1:1", seed=2, content="A different note under the same reference."))
        store.add_link(int(doubled.id or 0), int(kept.id or 0), "similar")
    with SqliteStore(path) as store:
        assert store.schema_version() >= 6
        notes = {n.id: n for n in store.list_notes(ann)}
        assert sorted(notes) == [kept.id, other.id]
        assert notes[kept.id].source_ref == "D1:1" and notes[other.id].source_ref == f"D1:1#{other.id}"
        assert sorted(i for i, _ in store.knn([ann], _note(ann, None, seed=1).embedding, 5)) == [kept.id, other.id]
        assert sorted(i for i, _ in store.lexical([ann], "lisbon", 5)) == [kept.id]
        assert store._query("SELECT count(*) FROM links")[0][0] == 0 and store.integrity_check() == "ok"
        with pytest.raises(DuplicateNote):
            store.add_note(_note(ann, "D1:1", seed=1))


def test_fleet_migration_keeps_the_first_of_each_duplicate_and_every_distinct_note(
    pg_database: tuple[str, str],
) -> None:
    import psycopg

    from kiosk.memory.pg_schema import FLEET_LATEST_VERSION
    from kiosk.memory.postgres_store import PostgresStore

    admin_url, terminal_url = pg_database
    with psycopg.connect(admin_url, autocommit=True) as admin:  # as concurrent imports left it before v3
        admin.execute(
            "DROP INDEX notes_by_source_ref; CREATE INDEX notes_by_source_ref ON notes(owner_id, source_ref); "
            "UPDATE kiosk_schema SET version = 2"
        )
    with PostgresStore(terminal_url, migrate=False) as store:
        ann = store.add_user("Ann").id
        kept = store.add_note(_note(ann, "D1:1", seed=1, content="We moved to Lisbon."))
        doubled = store.add_note(_note(ann, "D1:1", seed=1, content="We moved to Lisbon."))
        other = store.add_note(_note(ann, "D1:1", seed=2, content="A different note under the same reference."))
        store.add_link(int(doubled.id or 0), int(kept.id or 0), "similar")
    PostgresStore(admin_url).close()
    with PostgresStore(terminal_url) as store:
        assert store.schema_version() == FLEET_LATEST_VERSION
        notes = {n.id: n for n in store.list_notes(ann)}
        assert sorted(notes) == [kept.id, other.id]
        assert notes[kept.id].source_ref == "D1:1" and notes[other.id].source_ref == f"D1:1#{other.id}"
        assert count_rows(store, "links") == 0
        with pytest.raises(DuplicateNote):
            store.add_note(_note(ann, "D1:1", seed=1))


def _note(owner: int, ref: str | None, seed: int, content: str = "hello there") -> Note:
    return make_note(owner, content, seed=seed, source="import", source_ref=ref)
