"""The memory store on both backends (SQLite + sqlite-vec and PostgreSQL + pgvector, see conftest.py): CRUD,
owner-restricted KNN, links, history; then SQLite-only behaviour (pragmas, WAL readers, migrations)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

from kiosk.errors import StoreError
from kiosk.memory import Link, SqliteStore
from kiosk.memory.schema import LATEST_VERSION

from .builders import count_rows, make_note, unit


def test_pragmas_and_schema(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "memory.db")
    assert store.schema_version() == LATEST_VERSION
    assert store._query("PRAGMA journal_mode")[0][0] == "wal"
    assert store._query("PRAGMA foreign_keys")[0][0] == 1
    assert store.integrity_check() == "ok"


def test_users_roundtrip_and_duplicates(store: SqliteStore) -> None:
    ann = store.add_user("Ann")
    assert store.get_user(ann.id) == ann
    assert store.user_by_name(" Ann ") == ann
    with pytest.raises(StoreError, match="already exists"):
        store.add_user("Ann")
    with pytest.raises(StoreError, match="non-empty"):
        store.add_user("  ")
    bob = store.add_user("Bob")
    assert [u.name for u in store.list_users()] == ["Ann", "Bob"]
    assert store.get_user(bob.id + 100) is None


def test_note_crud_roundtrip(store: SqliteStore) -> None:
    ann = store.add_user("Ann")
    note = make_note(
        ann.id,
        "I adopted a dog",
        seed=1,
        keywords=["dog"],
        tags=["pets"],
        context="Ann on pets",
        source="import",
        source_ref="D1:1",
    )
    stored = store.add_note(note)
    assert stored.id is not None and stored.created_at is not None
    got = store.get_note(stored.id)
    assert got is not None
    assert (got.content, got.keywords, got.tags, got.context, got.source_ref) == (
        "I adopted a dog",
        ["dog"],
        ["pets"],
        "Ann on pets",
        "D1:1",
    )
    assert got.timestamp == note.timestamp and got.timestamp.tzinfo is not None
    assert got.embedding is not None and np.allclose(got.embedding, note.embedding)
    assert store.source_refs(ann.id) == {"D1:1"}

    got.tags = ["pets", "family"]
    updated = store.update_note(got, reason="evolution")
    assert updated.tags == ["pets", "family"]
    (entry,) = store.history(stored.id)
    assert entry.reason == "evolution"
    assert entry.before == {"tags": ["pets"]} and entry.after == {"tags": ["pets", "family"]}

    store.delete_note(stored.id)
    assert store.get_note(stored.id) is None
    assert store.history(stored.id) == []
    assert store.knn([ann.id], unit(1), 5) == []
    with pytest.raises(StoreError, match="no note"):
        store.delete_note(stored.id)


def test_bad_notes_are_rejected_clearly(store: SqliteStore) -> None:
    ann = store.add_user("Ann")
    with pytest.raises(StoreError, match="non-empty"):
        store.add_note(make_note(ann.id, "   "))
    with pytest.raises(StoreError, match="no user"):
        store.add_note(make_note(ann.id + 7))
    bad = make_note(ann.id)
    bad.embedding = np.full(384, np.nan, dtype=np.float32)
    with pytest.raises(StoreError, match="NaN"):
        store.add_note(bad)
    bad.embedding = np.ones(10, dtype=np.float32)
    with pytest.raises(StoreError, match="shape"):
        store.add_note(bad)
    naive = make_note(ann.id)
    naive.timestamp = datetime(2023, 1, 1)
    with pytest.raises(ValueError, match="timezone"):
        store.add_note(naive)
    assert store.count_notes() == 0


def test_list_is_chronological_and_paged(store: SqliteStore) -> None:
    ann = store.add_user("Ann")
    for minutes in (30, 10, 20):
        store.add_note(make_note(ann.id, f"at {minutes}", seed=minutes, minutes=minutes))
    assert [n.content for n in store.list_notes(ann.id)] == ["at 10", "at 20", "at 30"]
    assert [n.content for n in store.list_notes(ann.id, limit=1, offset=1)] == ["at 20"]
    assert store.count_notes(ann.id) == 3


def test_knn_is_restricted_to_owners_and_exact(store: SqliteStore) -> None:
    users = [store.add_user(f"user{i}").id for i in range(4)]
    vectors: dict[int, tuple[int, np.ndarray]] = {}
    for i in range(120):
        owner = users[i % 4]
        note = store.add_note(make_note(owner, f"n{i}", seed=1000 + i))
        assert note.id is not None and note.embedding is not None
        vectors[note.id] = (owner, note.embedding)
    query = unit(5)
    allowed = [users[1], users[3]]
    got = store.knn(allowed, query, 7)
    reference = sorted(
        ((nid, float(vec @ query)) for nid, (owner, vec) in vectors.items() if owner in allowed),
        key=lambda p: -p[1],
    )[:7]
    assert [nid for nid, _ in got] == [nid for nid, _ in reference]
    assert np.allclose([s for _, s in got], [s for _, s in reference], atol=1e-5)
    assert all(vectors[nid][0] in allowed for nid, _ in store.knn(allowed, query, 60))
    assert store.knn([], query, 5) == []
    with pytest.raises(StoreError, match="out of range"):
        store.knn(allowed, query, 0)


def test_owner_matrix_and_versions(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    v0 = store.owner_version(ann)
    first = store.add_note(make_note(ann, "later", seed=1, minutes=5))
    second = store.add_note(make_note(ann, "earlier", seed=2, minutes=1))
    store.add_note(make_note(bob, "bob", seed=3))
    ids, stamps, matrix = store.owner_matrix([ann])
    assert ids.tolist() == [second.id, first.id]
    assert stamps.dtype == np.float64 and stamps[0] < stamps[1]
    assert matrix.shape == (2, 384) and matrix.dtype == np.float32
    assert np.allclose(matrix[0], unit(2))
    v1 = store.owner_version(ann)
    assert v1 == v0 + 2
    bob_version = store.owner_version(bob)
    store.set_templates(ann, "face", np.stack([unit(9, 512)]), "sha")
    assert store.owner_version(ann) == v1 + 1
    assert store.owner_version(bob) == bob_version
    empty = store.owner_matrix([])
    assert empty[0].shape == (0,) and empty[2].shape == (0, 384)


def test_links_bidirectional_same_owner_and_cleaned_on_delete(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    a = store.add_note(make_note(ann, "a", seed=1))
    b = store.add_note(make_note(ann, "b", seed=2))
    c = store.add_note(make_note(ann, "c", seed=3, links=[Link(a.id or 0, "related")]))
    other = store.add_note(make_note(bob, "x", seed=4))
    assert a.id and b.id and c.id and other.id
    store.add_link(a.id, b.id, "related")
    assert store.links(a.id) == [Link(b.id, "related"), Link(c.id, "related")]
    assert store.links(b.id) == [Link(a.id, "related")]
    with pytest.raises(StoreError, match="different users"):
        store.add_link(a.id, other.id, "related")
    store.delete_note(a.id)
    assert store.links(b.id) == [] and store.links(c.id) == []
    assert count_rows(store, "links", "WHERE source_id = ? OR target_id = ?", (a.id, a.id)) == 0


def test_templates_replace_per_modality_and_keep_notes(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "keep me"))
    store.set_templates(ann, "face", np.stack([unit(1, 512), unit(2, 512)]), "sha-a")
    store.set_templates(ann, "palm", unit(3, 256), "sha-p")
    replaced = store.set_templates(ann, "face", np.stack([unit(4, 512)]), "sha-b")
    faces = store.templates("face")
    assert [t.id for t in faces] == [t.id for t in replaced]
    assert faces[0].model_sha256 == "sha-b" and np.allclose(faces[0].vector, unit(4, 512))
    assert len(store.templates()) == 2
    assert store.get_note(note.id or 0) is not None
    with pytest.raises(StoreError, match="zeros"):
        store.set_templates(ann, "face", np.zeros((1, 512)), "sha")


def test_delete_user_cascades_everything(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    notes = [store.add_note(make_note(ann, f"a{i}", seed=i)) for i in range(3)]
    store.add_link(notes[0].id or 0, notes[1].id or 0, "related")
    store.update_note(notes[2], reason="touch")
    bob_note = store.add_note(make_note(bob, "bob", seed=9))
    store.set_templates(ann, "face", unit(1, 512), "sha")
    version = store.owner_version(ann)
    store.delete_user(ann)
    assert store.get_user(ann) is None
    assert store.count_notes() == 1 and store.templates() == []
    for table in ("links", "history"):
        assert count_rows(store, table) == 0
    assert count_rows(store, "note_vectors") == 1
    assert store.knn([bob], unit(9), 3)[0][0] == bob_note.id
    assert store.owner_version(ann) > version
    if isinstance(store, SqliteStore):
        assert store.integrity_check() == "ok"


def test_update_cannot_move_a_note_to_another_owner(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    note = store.add_note(make_note(ann, "mine"))
    note.owner_id = bob
    with pytest.raises(StoreError, match="belongs to user"):
        store.update_note(note, reason="steal")


def test_reembedding_moves_the_vector(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "x", seed=1))
    store.add_note(make_note(ann, "y", seed=2))
    note.embedding = unit(50)
    store.update_note(note, reason="re-encode")
    assert store.knn([ann], unit(50), 1)[0][0] == note.id
    assert store.history(note.id or 0)[0].after == {"embedding": "re-encoded"}


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


def test_timestamps_are_utc(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann))
    assert note.timestamp.tzinfo is not None and note.timestamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert note.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


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
