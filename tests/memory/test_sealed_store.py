"""SqliteStore with a master key: contents and templates sealed at rest, bound to their rows, renewable."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import numpy as np
import pytest

from kiosk.errors import KioskError, StoreError
from kiosk.memory import SqliteStore, schema, sqlite_store
from kiosk.security.sealing import MasterKey, new_key

from .builders import make_note, unit

SECRET = "my locker code is 4417-PELICAN"


@pytest.fixture()
def master() -> MasterKey:
    return MasterKey(new_key(), "test")


def raw_files(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if not p.name.endswith(".bak"))


def test_contents_history_and_templates_round_trip_but_are_sealed_on_disk(tmp_path: Path, master: MasterKey) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path, master_key=master)
    ann = store.add_user("Ann").id
    template = unit(7, dim=128)
    store.set_templates(ann, "face", template[None, :], "sha")
    note = store.add_note(make_note(ann, SECRET, keywords=["PELICAN-KW"], tags=["TAG-SECRET"], context="CTX-SECRET"))
    assert note.id is not None
    note.content = SECRET + " (updated)"
    store.update_note(note, "edit")
    store.close()

    reopened = SqliteStore(path, master_key=master)
    got = reopened.get_note(int(note.id))
    assert got is not None and got.content == SECRET + " (updated)"
    assert got.keywords == ["PELICAN-KW"] and got.tags == ["TAG-SECRET"] and got.context == "CTX-SECRET"
    (entry,) = reopened.history(int(note.id))
    assert entry.before["content"] == SECRET
    np.testing.assert_array_equal(reopened.templates("face")[0].vector, template)
    assert reopened._query("SELECT typeof(content), typeof(keywords), typeof(context) FROM notes") == [
        ("blob", "blob", "blob")
    ]
    reopened.checkpoint()
    reopened.close()
    data = raw_files(path)
    for clear in (b"4417-PELICAN", b"PELICAN-KW", b"TAG-SECRET", b"CTX-SECRET", template.tobytes()[:32]):
        assert clear not in data


def test_a_ciphertext_moved_to_another_row_fails_authentication(tmp_path: Path, master: MasterKey) -> None:
    store = SqliteStore(tmp_path / "memory.db", master_key=master)
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    first = store.add_note(make_note(ann, "Ann's first"))
    second = store.add_note(make_note(ann, "Ann's second", seed=1))
    bobs = store.add_note(make_note(bob, "Bob's", seed=2))
    with store._write():
        store._conn.execute(
            "UPDATE notes SET content = (SELECT content FROM notes WHERE id = ?) WHERE id = ?", (first.id, second.id)
        )
        store._conn.execute(
            "UPDATE notes SET owner_id = ? WHERE id = ?", (ann, bobs.id)
        )  # a row re-assigned to another owner
    # Never decrypted: the rows are quarantined (left out of reads) and `kiosk doctor` names them.
    assert store.get_note(int(second.id or 0)) is None and store.get_note(int(bobs.id or 0)) is None
    assert {(row.kind, row.row_id) for row in store.damaged_sealed_rows()} == {("note", second.id), ("note", bobs.id)}
    assert store.get_note(int(first.id or 0)).content == "Ann's first"  # type: ignore[union-attr]


def test_wrong_or_missing_key_is_a_clear_error(tmp_path: Path, master: MasterKey) -> None:
    path = tmp_path / "memory.db"
    SqliteStore(path, master_key=master).close()
    with pytest.raises(KioskError, match="another master key"):
        SqliteStore(path, master_key=MasterKey(new_key(), "other"))
    with pytest.raises(StoreError, match="is encrypted"):
        SqliteStore(path)


def test_security_upgrade_encrypts_an_existing_plaintext_database_in_place(
    tmp_path: Path, master: MasterKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.db"
    before_security = schema.MIGRATIONS.index(schema._v3_security)  # the schema just before encryption at rest
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", schema.MIGRATIONS[:before_security])
    monkeypatch.setattr(sqlite_store, "LATEST_VERSION", before_security)
    old = SqliteStore(path)
    # Rows are written as a build of that schema wrote them (raw SQL): today's store code writes columns that
    # later migrations add (users.kind, notes.sensitivity), which that file does not have.
    old._conn.execute("INSERT INTO users (name, created_at) VALUES ('Ann', 0)")
    ann = int(old._conn.last_insert_rowid())
    template = unit(3, dim=128)
    conn = old._conn
    conn.execute(
        "INSERT INTO templates (user_id, modality, dimension, vector, model_sha256, created_at) "
        "VALUES (?, 'face', ?, ?, 'sha', 0)",
        (ann, template.shape[0], template.astype(np.float32).tobytes()),
    )
    conn.execute(
        "INSERT INTO notes (owner_id, modality, content, timestamp, keywords, tags, context, embedding, source, "
        "created_at, updated_at) VALUES (?, 'face', 'second version', 0, ?, '[]', '', ?, 'chat', 0, 0)",
        (ann, json.dumps(["PELICAN-KW"]), unit(0).tobytes()),
    )
    note_id = int(conn.last_insert_rowid())
    conn.execute(
        "INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (?, ?, ?)", (note_id, ann, unit(0).tobytes())
    )
    conn.execute(
        "INSERT INTO history (note_id, at, reason, before, after) VALUES (?, 0, 'edit', ?, ?)",
        (note_id, json.dumps({"content": SECRET}), json.dumps({"content": "second version"})),
    )
    note = make_note(ann, "second version")
    note.id = note_id
    old.checkpoint()
    old.close()
    assert b"4417-PELICAN" in raw_files(path)  # the control: the scan does see clear text

    monkeypatch.undo()
    upgraded = SqliteStore(path, master_key=master)
    assert upgraded.schema_version() == schema.LATEST_VERSION
    got = upgraded.get_note(int(note.id or 0))
    assert got is not None and got.content == "second version" and got.keywords == ["PELICAN-KW"]
    assert upgraded.history(int(note.id or 0))[0].before["content"] == SECRET
    np.testing.assert_array_equal(upgraded.templates("face")[0].vector, template)
    assert upgraded.seal_plaintext_rows() == 0  # nothing left in clear
    upgraded.close()
    data = raw_files(path)
    assert b"4417-PELICAN" not in data and b"PELICAN-KW" not in data and template.tobytes()[:32] not in data
    raw = apsw.Connection(str(path))
    assert raw.execute("SELECT count(*) FROM notes WHERE typeof(content) = 'text'").fetchone()[0] == 0


def test_re_enrollment_rekeys_the_users_notes_without_losing_them(tmp_path: Path, master: MasterKey) -> None:
    store = SqliteStore(tmp_path / "memory.db", master_key=master)
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    store.set_templates(ann, "face", unit(1, dim=128)[None, :], "sha")
    store.set_templates(bob, "face", unit(2, dim=128)[None, :], "sha")
    note = store.add_note(make_note(ann, SECRET))
    note.content = "edited"
    store.update_note(note, "edit")
    bobs = store.add_note(make_note(bob, "Bob's", seed=3))
    sealed_before = store._query("SELECT content FROM notes WHERE id = ?", (note.id,))[0][0]
    assert store.key_generation(ann) == 1

    assert store.revoke_templates(ann) == 1
    assert store.templates("face")[0].user_id == bob  # Ann can no longer be matched
    fresh = unit(9, dim=128)
    store.set_templates(ann, "face", fresh[None, :], "sha2")  # enrollment after revocation: no re-key needed
    store.set_templates(ann, "face", unit(10, dim=128)[None, :], "sha3")  # re-enrollment over templates: re-key
    assert store.key_generation(ann) == 2 and store.key_generation(bob) == 1
    assert store._query("SELECT content FROM notes WHERE id = ?", (note.id,))[0][0] != sealed_before
    assert store.get_note(int(note.id or 0)).content == "edited"  # type: ignore[union-attr]
    assert store.history(int(note.id or 0))[0].before["content"] == SECRET
    assert store.get_note(int(bobs.id or 0)).content == "Bob's"  # type: ignore[union-attr]
    assert store.rekey_user(ann) == 3
    assert store.get_note(int(note.id or 0)).content == "edited"  # type: ignore[union-attr]
    # the old sealed value no longer opens with the user's current key
    with store._write():
        store._conn.execute("UPDATE notes SET content = ? WHERE id = ?", (sealed_before, note.id))
    assert store.get_note(int(note.id or 0)) is None  # quarantined, never opened
    assert [(row.kind, row.row_id) for row in store.damaged_sealed_rows()] == [("note", note.id)]


def test_master_key_rotation_rewraps_user_keys(tmp_path: Path, master: MasterKey) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path, master_key=master)
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, SECRET))
    new_master = MasterKey(new_key(), "new")
    assert store.rotate_master_key(new_master) == 1
    store.close()
    with pytest.raises(KioskError, match="another master key"):
        SqliteStore(path, master_key=master)
    with SqliteStore(path, master_key=new_master) as reopened:
        assert reopened.get_note(int(note.id or 0)).content == SECRET  # type: ignore[union-attr]


def test_rolled_back_user_creation_does_not_leave_a_cached_key(tmp_path: Path, master: MasterKey) -> None:
    store = SqliteStore(tmp_path / "memory.db", master_key=master)
    ann = store.add_user("Ann").id
    with pytest.raises(StoreError):
        store.add_note(make_note(ann + 100, "no such owner"))
    note = store.add_note(make_note(ann, "kept"))
    store.close()
    with SqliteStore(tmp_path / "memory.db", master_key=master) as reopened:
        assert reopened.get_note(int(note.id or 0)).content == "kept"  # type: ignore[union-attr]
