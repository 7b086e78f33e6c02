"""The CLI's erasure and renewal commands write the audit log, and the log never holds memory contents."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kiosk.cli import memory as memory_cli
from kiosk.cli import users as users_cli
from kiosk.config import load_config
from kiosk.memory import Note
from kiosk.memory.open import open_store
from kiosk.security.audit import audit_log_for

SECRET = "Zephyrine hides the safe key behind the QUINCE painting"


def test_revoke_delete_and_forget_are_audited_without_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    cfg = load_config()
    with open_store(cfg) as store:
        user = store.add_user("Zephyrine")
        store.set_templates(user.id, "face", np.eye(8, dtype=np.float32)[0][None, :], "f" * 64)
        vector = np.ones(384, dtype=np.float32)
        notes = [
            store.add_note(
                Note(None, user.id, "face", f"{SECRET} #{i}", datetime(2024, 1, 1, tzinfo=UTC), embedding=vector)
            )
            for i in range(2)
        ]
    app = typer.Typer()
    users_cli.register(app)
    memory_cli.register(app)
    runner = CliRunner()
    for args in (
        ["users", "revoke", "Zephyrine"],
        ["memory", "delete", str(notes[0].id)],
        ["users", "delete", "Zephyrine", "--yes"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    log = audit_log_for(cfg)
    assert [e["action"] for e in log.entries()] == ["templates-revoked", "note-deleted", "user-forgotten"]
    raw = b"".join(path.read_bytes() for path in log.files())
    assert b"QUINCE" not in raw and b"Zephyrine" not in raw and b"safe key" not in raw
    assert all(e["user_id"] == user.id for e in log.entries())


def test_master_key_rotation_keeps_the_notes_readable_and_is_audited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kiosk.cli import security as security_cli

    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    cfg = load_config()
    with open_store(cfg) as store:
        user = store.add_user("Ann")
        note = store.add_note(
            Note(None, user.id, "face", SECRET, datetime(2024, 1, 1, tzinfo=UTC), embedding=np.ones(384, np.float32))
        )
    key_file = cfg.security.key_path(cfg.paths.data_dir)
    old_key = key_file.read_bytes()
    app = typer.Typer()
    security_cli.register(app)
    app.command("noop")(lambda: None)  # a second command keeps typer from collapsing the group
    result = CliRunner().invoke(app, ["security", "rotate-key"])
    assert result.exit_code == 0, result.output
    assert key_file.read_bytes() != old_key and key_file.stat().st_mode & 0o777 == 0o600
    assert not key_file.with_name(key_file.name + ".new").exists()
    with open_store(cfg) as reopened:
        assert reopened.get_note(int(note.id or 0)).content == SECRET  # type: ignore[union-attr]
    (entry,) = audit_log_for(cfg).entries()
    assert entry["action"] == "master-key-rotated" and entry["user_keys"] == 1


def test_rotating_the_key_of_a_fleet_terminal_alone_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kiosk.cli import security as security_cli

    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIOSK_STORE__URL", "postgresql://terminal:pw@127.0.0.1:1/fleet")
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    app = typer.Typer()
    security_cli.register(app)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["security", "rotate-key"])
    assert result.exit_code != 0 and "fleet store, whose master key all terminals share" in result.output
    assert not list((tmp_path / "home").glob("**/master.key*"))  # refused before any key was made or replaced
