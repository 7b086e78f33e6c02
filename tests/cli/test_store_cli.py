"""`kiosk store migrate` as an operator runs it: SQLite terminal memory into the fleet store, verified, re-runnable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from kiosk.memory import Link, Note, SqliteStore
from kiosk.memory.postgres_store import PostgresStore


def unit(seed: int, dim: int = 384) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def make_note(owner_id: int, content: str, seed: int, minutes: int = 0, **extra: object) -> Note:
    moment = datetime(2023, 5, 8, 13, 56, tzinfo=UTC) + timedelta(minutes=minutes)
    return Note(None, owner_id, "face", content, moment, embedding=unit(seed), **extra)  # type: ignore[arg-type]


def _kiosk(*args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "kiosk", "store", "migrate", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def _terminal_memory(path: Path) -> dict[str, list[str]]:
    with SqliteStore(path) as store:
        ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
        store.set_templates(ann, "face", np.stack([unit(1, 512), unit(2, 512)]), "sha-face")
        a = store.add_note(make_note(ann, "Ann's first", seed=1, source_ref="D1:1"))
        b = store.add_note(make_note(ann, "Ann's second", seed=2, minutes=1, links=[Link(a.id or 0, "related")]))
        store.add_note(make_note(bob, "Bob's only", seed=3))
        b.tags = ["evolved"]
        store.update_note(b, reason="evolution")
        return {u.name: [n.content for n in store.list_notes(u.id)] for u in store.list_users()}


def _scoped_terminal_memory(path: Path) -> None:
    """A group with Ann in it, a sensitive group note she said, a public note, a reinforced and an archived one."""
    with SqliteStore(path) as store:
        ann = store.user_by_name("Ann")
        assert ann is not None
        family = store.add_group("family")
        store.add_member(family.id, ann.id)
        store.add_note(make_note(family.id, "grandma's pills at eight", 4, author_id=ann.id, sensitivity="health"))
        store.add_note(make_note(store.public_owner_id(), "the lobby closes at ten", 5))
        first, second = store.list_notes(ann.id)
        store.reinforce([first.id or 0], datetime(2024, 1, 2, tzinfo=UTC))
        store.archive_notes([second.id or 0], datetime(2024, 6, 1, tzinfo=UTC))


def test_migrate_moves_everything_verifies_and_is_idempotent(tmp_path: Path, pg_database: tuple[str, str]) -> None:
    _, url = pg_database
    db = tmp_path / "memory.db"
    expected = _terminal_memory(db)
    _scoped_terminal_memory(db)
    with PostgresStore(url) as fleet:
        fleet.add_user("Bob")  # enrolled at another terminal already: merged by name

    done = _kiosk("--from", f"sqlite:{db}", "--to", url)
    assert done.returncode == 0, done.stderr
    assert "verified: 5/5 notes, 1/1 links and 1/1 group memberships" in done.stdout

    with PostgresStore(url) as fleet:
        users = {u.name: u.id for u in fleet.list_users()}
        assert {name: [n.content for n in fleet.list_notes(uid)] for name, uid in users.items()} == expected
        first, second = fleet.list_notes(users["Ann"])
        assert second.links == [Link(first.id or 0, "related")] and first.links == [Link(second.id or 0, "related")]
        assert second.tags == ["evolved"] and [h.reason for h in fleet.history(second.id or 0)] == ["evolution"]
        assert first.source_ref == "D1:1" and np.allclose(first.embedding, unit(1))
        faces = fleet.templates("face")
        assert [t.user_id for t in faces] == [users["Ann"]] * 2 and faces[0].model_sha256 == "sha-face"
        assert fleet.knn([users["Ann"]], unit(1), 1)[0][0] == first.id
        # Strength and archive state come along: the archived note is listed but out of retrieval.
        assert first.reinforcements == 1 and first.last_used_at == datetime(2024, 1, 2, tzinfo=UTC)
        assert second.archived and second.id not in {i for i, _ in fleet.knn([users["Ann"]], unit(2), 3)}
        family = fleet.group_by_name("family")
        assert family is not None and [u.name for u in fleet.members(family.id)] == ["Ann"]
        (group_note,) = fleet.list_notes(family.id)
        assert group_note.scope == "group:family" and group_note.author_id == users["Ann"]
        assert group_note.sensitivity == "health" and fleet.sensitive_note_ids([family.id]) == {group_note.id}
        (public_note,) = fleet.list_notes(fleet.public_owner_id())
        assert public_note.content == "the lobby closes at ten" and public_note.scope == "public"

    again = _kiosk("--from", f"sqlite:{db}", "--to", url, "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["notes_copied"], report["notes_already_there"], report["verified"]) == (0, 5, True)
    assert "secret" not in again.stdout  # the password never appears in the report
    with PostgresStore(url) as fleet:
        assert fleet.count_notes() == 5 and len(fleet.list_groups()) == 1


def test_migrate_bad_arguments_are_one_clear_line(tmp_path: Path) -> None:
    missing = _kiosk("--from", f"sqlite:{tmp_path / 'none.db'}", "--to", "postgresql://kiosk@127.0.0.1:1/x")
    assert missing.returncode == 2 and "no memory database" in missing.stderr and "Traceback" not in missing.stderr
    wrong = _kiosk("--from", "memory.db", "--to", "postgresql://kiosk@127.0.0.1:1/x")
    assert wrong.returncode == 2 and "--from must be sqlite:PATH" in wrong.stderr
    (tmp_path / "memory.db").touch()
    unreachable = _kiosk("--from", f"sqlite:{tmp_path / 'memory.db'}", "--to", "postgresql://kiosk:pw@127.0.0.1:1/x")
    assert unreachable.returncode == 2 and "unreachable" in unreachable.stderr and "pw" not in unreachable.stderr


def test_a_sealed_terminal_memory_moves_into_a_sealed_fleet_with_the_configured_key(
    tmp_path: Path, pg_database: tuple[str, str]
) -> None:
    from kiosk.config import load_config
    from kiosk.security.sealing import master_key_for

    _, url = pg_database
    env = {"KIOSK_HOME": str(tmp_path / "home"), "KIOSK_SECURITY__KEY_SOURCE": "file"}
    cfg = load_config(None, environ=env)
    key = master_key_for(cfg.security, cfg.paths.data_dir)
    db = tmp_path / "memory.db"
    with SqliteStore(db, master_key=key) as sealed:
        ann = sealed.add_user("Ann").id
        sealed.add_note(make_note(ann, "the spare key is under the blue pot", 1, sensitivity="location"))

    done = _kiosk("--from", f"sqlite:{db}", "--to", url, extra_env=env)
    assert done.returncode == 0, done.stderr
    assert "verified: 1/1 notes" in done.stdout
    with PostgresStore(url, master_key=key) as fleet:
        (note,) = fleet.list_notes(fleet.user_by_name("Ann").id)  # type: ignore[union-attr]
        assert note.content == "the spare key is under the blue pot" and note.sensitivity == "location"
        query = "SELECT count(*) FROM notes WHERE sealed IS NOT NULL AND content = ''"
        assert fleet._run(None, lambda cur: cur.execute(query).fetchone()) == (1,)
