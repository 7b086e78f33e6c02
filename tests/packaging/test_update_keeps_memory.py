"""Updates keep the memory DB: a newer build migrates an older-schema DB forward, backup first, no note lost.

The schema has one version so far, so "the newer build" is this build plus a future migration added through
monkeypatch: it adds a column and rebuilds the vec0 index from the notes' stored embeddings (the kind of
change schema.py anticipates). The DB is opened the way an updated terminal opens it first: the systemd
unit's `ExecStartPre=kiosk doctor`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kiosk.cli import doctor as doctor_cli
from kiosk.config import SecurityConfig
from kiosk.memory import schema, sqlite_store
from kiosk.memory.note import EMBEDDING_DIM, Note
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.security.sealing import master_key_for

Snapshot = dict[str, Any]


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(EMBEDDING_DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _older_build_db(path: Path) -> Snapshot:
    """A DB as the previous build leaves it: users, templates, notes with vectors, links and history."""
    with SqliteStore(path) as store:
        owners = [store.add_user(name).id for name in ("Ann", "Bo", "Cy")]
        for index, owner in enumerate(owners):
            assert owner is not None
            store.set_templates(owner, "face", np.stack([unit(1000 + index), unit(2000 + index)]), "sha-old-build")
            ids = []
            for turn in range(12):
                note = Note(
                    id=None,
                    owner_id=owner,
                    modality="face",
                    content=f"note {turn} of user {owner}: likes café ☕ and tea",
                    timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=UTC) + timedelta(minutes=turn),
                    embedding=unit(100 * owner + turn),
                    keywords=[f"k{turn}"],
                    tags=["t"],
                    context=f"session {turn // 4}",
                    source="import",
                    source_ref=f"D{owner}:{turn}",
                )
                ids.append(store.add_note(note).id)
            store.add_link(ids[0], ids[1], "related")
            first = store.get_note(ids[2])
            assert first is not None
            first.tags = ["t", "evolved"]
            store.update_note(first, "evolution: strengthen")
        assert store.schema_version() == schema.LATEST_VERSION
        return _snapshot(store, [o for o in owners if o is not None])


def _note_fields(note: Note) -> tuple[Any, ...]:
    assert note.embedding is not None
    return (
        note.id,
        note.owner_id,
        note.content,
        note.timestamp,
        note.keywords,
        note.tags,
        note.context,
        note.source,
        note.source_ref,
        note.embedding.tobytes(),
        sorted((link.target_id, link.kind) for link in note.links),
    )


def _snapshot(store: SqliteStore, owners: list[int]) -> Snapshot:
    notes = {o: [_note_fields(n) for n in store.list_notes(o)] for o in owners}
    return {
        "users": [(u.id, u.name) for u in store.list_users()],
        "templates": [(t.user_id, t.modality, t.model_sha256, t.vector.tobytes()) for t in store.templates()],
        "notes": notes,
        "history": {o: [len(store.history(n[0])) for n in notes[o]] for o in owners},
        "knn": {o: store.knn([o], unit(7 + o), k=5) for o in owners},
        "count": store.count_notes(),
    }


def _future_migration(path: Path, seen_backups: list[list[Path]]) -> Callable[[apsw.Connection], None]:
    def v_next(conn: apsw.Connection) -> None:
        seen_backups.append(sorted(path.parent.glob(f"{path.name}.v*.bak")))
        conn.execute("ALTER TABLE notes ADD COLUMN mood TEXT NOT NULL DEFAULT ''")
        conn.execute("DROP TABLE note_vectors")
        conn.execute(
            f"""CREATE VIRTUAL TABLE note_vectors USING vec0(
                note_id INTEGER PRIMARY KEY, owner_id INTEGER PARTITION KEY,
                embedding FLOAT[{EMBEDDING_DIM}] distance_metric=cosine, chunk_size=64)"""
        )
        conn.execute(
            "INSERT INTO note_vectors (note_id, owner_id, embedding) SELECT id, owner_id, embedding FROM notes"
        )

    return v_next


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("KIOSK_HOME", str(home))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    return home


def _doctor_database(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`kiosk doctor --json`, in-process (so the monkeypatched migrations apply), database check only."""
    from kiosk.cli import common

    monkeypatch.setattr(common, "_config_path", None)
    app = typer.Typer()
    app.callback()(lambda: None)
    doctor_cli.register(app)
    skip = ["--skip", "models", "--skip", "llm build", "--skip", "calibration", "--skip", "cameras", "--skip", "disk"]
    result = CliRunner().invoke(app, ["doctor", "--json", *skip])
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


def test_a_newer_build_migrates_the_db_forward_with_a_backup_first(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = home / "memory.db"
    before = _older_build_db(db)
    old_version = schema.LATEST_VERSION
    seen_backups: list[list[Path]] = []
    migrations = [*schema.MIGRATIONS, _future_migration(db, seen_backups)]
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", migrations)
    monkeypatch.setattr(sqlite_store, "LATEST_VERSION", len(migrations))

    report = _doctor_database(monkeypatch)

    assert report["healthy"], report
    [check] = report["checks"]
    assert check["status"] == "ok" and f"{before['count']} notes" in check["message"]
    assert len(seen_backups) == 1 and len(seen_backups[0]) == 1, "the backup must exist before the migration runs"
    backup = seen_backups[0][0]
    assert backup.name.startswith(f"memory.db.v{old_version}-")
    with SqliteStore(db, master_key=master_key_for(SecurityConfig(), home)) as upgraded:
        assert upgraded.schema_version() == old_version + 1
        assert upgraded.integrity_check() == "ok"
        after = _snapshot(upgraded, list(before["notes"]))
    assert after == before, "every note, vector, link, template and history entry survives the update"
    assert sorted(db.parent.glob("memory.db.v*.bak")) == [backup], "opening the migrated DB again backs up nothing"

    monkeypatch.setattr(sqlite_store, "MIGRATIONS", schema.MIGRATIONS)
    monkeypatch.setattr(sqlite_store, "LATEST_VERSION", old_version)
    with SqliteStore(backup) as restored:
        assert restored.schema_version() == old_version
        assert _snapshot(restored, list(before["notes"])) == before, "the backup is a full copy of the old DB"


def test_a_failing_migration_leaves_the_old_db_whole_and_says_so(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = home / "memory.db"
    before = _older_build_db(db)

    def broken(conn: apsw.Connection) -> None:
        conn.execute("ALTER TABLE notes ADD COLUMN mood TEXT")
        conn.execute("UPDATE notes SET content = 'overwritten'")
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    monkeypatch.setattr(sqlite_store, "MIGRATIONS", [*schema.MIGRATIONS, broken])
    monkeypatch.setattr(sqlite_store, "LATEST_VERSION", len(schema.MIGRATIONS) + 1)

    report = _doctor_database(monkeypatch)

    assert not report["healthy"]
    [check] = report["checks"]
    assert check["status"] == "fail" and "cannot be opened" in check["message"] and "backup" in check["fix"]
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", schema.MIGRATIONS)
    monkeypatch.setattr(sqlite_store, "LATEST_VERSION", schema.LATEST_VERSION)
    with SqliteStore(db) as untouched:
        assert untouched.schema_version() == schema.LATEST_VERSION
        assert _snapshot(untouched, list(before["notes"])) == before, "the failed migration was rolled back"
    assert len(list(db.parent.glob("memory.db.v*.bak"))) == 1
