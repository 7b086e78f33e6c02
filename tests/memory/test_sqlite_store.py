"""What only the SQLite store does: pragmas, WAL readers beside a writer, migrations with a backup, clear errors
on a damaged file (the behaviour both stores share: test_store_contract.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import pytest

from kiosk.errors import StoreError
from kiosk.memory import SqliteStore
from kiosk.memory.schema import LATEST_VERSION

from .builders import make_note, unit


def test_pragmas_and_schema(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "memory.db")
    assert store.schema_version() == LATEST_VERSION
    assert store._query("PRAGMA journal_mode")[0][0] == "wal"
    assert store._query("PRAGMA foreign_keys")[0][0] == 1
    assert store.integrity_check() == "ok"


def test_reader_sees_commits_while_writer_writes(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    writer = SqliteStore(path)
    owner = writer.add_user("Ann").id
    reader = SqliteStore(path)
    errors: list[BaseException] = []
    counts: list[int] = []
    done = threading.Event()

    def read_loop() -> None:
        try:
            while not done.is_set():
                counts.append(reader.count_notes(owner))
                reader.knn([owner], unit(3), 5)
                reader.owner_matrix([owner])
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=read_loop)
    thread.start()
    try:
        for i in range(60):
            writer.add_note(make_note(owner, f"n{i}", seed=i))
    finally:
        done.set()
        thread.join()
    assert not errors
    assert len(counts) > 1 and counts == sorted(counts)
    assert reader.count_notes(owner) == 60


def test_reader_is_not_blocked_by_an_open_write_transaction(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    writer = SqliteStore(path)
    owner = writer.add_user("Ann").id
    writer.add_note(make_note(owner, "committed"))
    reader = SqliteStore(path)
    with writer._write():
        writer._conn.execute("UPDATE notes SET content = 'uncommitted'")
        assert [n.content for n in reader.list_notes(owner)] == ["committed"]
    assert [n.content for n in reader.list_notes(owner)] == ["uncommitted"]


def test_migration_backs_up_an_old_database_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kiosk.memory import schema, sqlite_store

    path = tmp_path / "memory.db"
    old = SqliteStore(path)
    owner = old.add_user("Ann").id
    old.add_note(make_note(owner, "survives the upgrade"))
    old.close()

    def v2_add_column(conn: apsw.Connection) -> None:
        conn.execute("ALTER TABLE notes ADD COLUMN mood TEXT")

    monkeypatch.setattr(sqlite_store, "MIGRATIONS", [*schema.MIGRATIONS, v2_add_column])
    monkeypatch.setattr(sqlite_store, "LATEST_VERSION", schema.LATEST_VERSION + 1)
    upgraded = SqliteStore(path)
    assert upgraded.schema_version() == schema.LATEST_VERSION + 1
    assert [n.content for n in upgraded.list_notes(owner)] == ["survives the upgrade"]
    (backup,) = list(tmp_path.glob(f"memory.db.v{schema.LATEST_VERSION}-*.bak"))
    restored = apsw.Connection(str(backup))
    assert restored.execute("SELECT content FROM notes").fetchall() == [("survives the upgrade",)]
    assert restored.execute("SELECT version FROM schema_version").fetchall() == [(schema.LATEST_VERSION,)]
    upgraded.close()
    monkeypatch.undo()
    with pytest.raises(StoreError, match="newer than this build"):
        SqliteStore(path)


def test_garbage_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot be opened"):
        SqliteStore(path)
    assert path.read_bytes().startswith(b"this is not")


def test_two_processes_opening_a_new_database_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "memory.db"
    code = "import sys; from kiosk.memory import SqliteStore; SqliteStore(sys.argv[1]).close()"
    children = [subprocess.Popen([sys.executable, "-c", code, str(path)], stderr=subprocess.PIPE) for _ in range(3)]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
    assert SqliteStore(path).schema_version() == LATEST_VERSION
