"""One altered sealed row is quarantined (skipped, logged, named by `kiosk doctor` with its repair), never fatal
for other people; deleting it never needs to open it (issue #34, point 4)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
from typer.testing import CliRunner

from kiosk.config import KioskConfig
from kiosk.doctor import check_database
from kiosk.memory import SqliteStore
from kiosk.memory.note import EMBEDDING_DIM, Note
from kiosk.memory.open import master_key


def _unit(seed: int, dim: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _note(owner: int, text: str, seed: int) -> Note:
    moment = datetime(2024, 5, 1, tzinfo=UTC)
    return Note(None, owner, "text", text, moment, embedding=_unit(seed, EMBEDDING_DIM))


def flip_byte(db: Path, statement: str, row_id: int) -> None:
    """Flip the last byte (inside the GCM tag) of one sealed value, as someone with the file could."""
    conn = apsw.Connection(str(db))
    try:
        table, column = statement.split(".")
        blob = bytes(next(conn.execute(f"SELECT {column} FROM {table} WHERE id = ?", (row_id,)))[0])
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE id = ?", (blob[:-1] + bytes([blob[-1] ^ 1]), row_id))
    finally:
        conn.close()


def _seeded(config: KioskConfig) -> tuple[dict[str, int], dict[str, int], int]:
    """Ann, Bob, Cyd with a face template and a note each; returns (user ids, note ids, Ann's template id)."""
    users, notes = {}, {}
    with SqliteStore(config.paths.db, master_key=master_key(config)) as store:
        for seed, name in enumerate(("Ann", "Bob", "Cyd")):
            users[name] = store.add_user(name).id
            store.set_templates(users[name], "face", _unit(seed, 128)[None, :], "sha-test")
            text = f"{name} keeps the spare key under the mat"
            notes[name] = int(store.add_note(_note(users[name], text, seed)).id or 0)
        ann_template = next(t.id for t in store.templates() if t.user_id == users["Ann"])
    return users, notes, int(ann_template or 0)


def test_a_damaged_template_and_note_are_quarantined_and_named_by_doctor(config: KioskConfig) -> None:
    users, notes, ann_template = _seeded(config)
    flip_byte(config.paths.db, "templates.vector", ann_template)
    flip_byte(config.paths.db, "notes.content", notes["Bob"])

    with SqliteStore(config.paths.db, master_key=master_key(config)) as store:
        # The gate still has everyone else's templates; Ann's damaged one is left out, not fatal.
        assert {t.user_id for t in store.templates()} == {users["Bob"], users["Cyd"]}
        # Others' notes read as before; Bob's damaged note is skipped in his listing and in retrieval reads.
        assert [n.content for n in store.list_notes(users["Cyd"])] == ["Cyd keeps the spare key under the mat"]
        assert store.list_notes(users["Bob"]) == []
        hits = [note_id for note_id, _ in store.knn([users["Bob"], users["Cyd"]], _unit(1, EMBEDDING_DIM), 5)]
        assert notes["Bob"] in hits
        assert [n.id for n in store.get_notes(hits)] == [notes["Cyd"]]

    damaged = [c for c in check_database(config) if c.name == "sealed rows"]
    assert all(c.status == "fail" for c in damaged) and len(damaged) == 2, damaged
    fixes = " | ".join(c.fix for c in damaged)
    assert f"kiosk memory delete {notes['Bob']}" in fixes
    assert "kiosk users revoke 'Ann'" in fixes

    # The repairs work on the damaged rows: neither needs to open them.
    with SqliteStore(config.paths.db, master_key=master_key(config)) as store:
        store.delete_note(notes["Bob"])
        assert store.revoke_templates(users["Ann"]) == 1
        assert store.count_notes(users["Bob"]) == 0
    [healthy] = check_database(config)
    assert healthy.status == "ok" and "every sealed row authenticates" in healthy.message


def test_the_cli_lists_and_deletes_around_a_damaged_note(config: KioskConfig) -> None:
    from kiosk.cli import _register_features, app

    _, notes, _ = _seeded(config)
    flip_byte(config.paths.db, "notes.content", notes["Bob"])
    _register_features()
    env = {"KIOSK_HOME": str(config.paths.data_dir), "KIOSK_PATHS__MODELS_DIR": str(config.paths.models)}
    runner = CliRunner()
    listed = runner.invoke(app, ["memory", "list", "--user", "Cyd", "--json"], env=env)
    assert listed.exit_code == 0 and "Cyd keeps the spare key" in listed.output, listed.output
    owner_listed = runner.invoke(app, ["memory", "list", "--user", "Bob", "--json"], env=env)
    assert owner_listed.exit_code == 0, owner_listed.output
    deleted = runner.invoke(app, ["memory", "delete", str(notes["Bob"]), "--json"], env=env)
    assert deleted.exit_code == 0, deleted.output
    users_listed = runner.invoke(app, ["users", "list", "--json"], env=env)
    assert users_listed.exit_code == 0, users_listed.output
