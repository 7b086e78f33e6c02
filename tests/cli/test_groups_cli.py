"""`kiosk groups ...`, `kiosk remember --scope` and `kiosk memory list/restore/archive-faded` in-process, on
the SQLite store and on the fleet store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kiosk.cli import groups as groups_cli
from kiosk.cli import memory as memory_cli
from kiosk.config import KioskConfig, load_config
from kiosk.memory import EMBEDDING_DIM, Note, SqliteStore
from kiosk.memory.open import open_store


def make_old_note(store: SqliteStore, owner_id: int, content: str = "said in 2022") -> int:
    vector = np.random.default_rng(0).standard_normal(EMBEDDING_DIM).astype(np.float32)
    note = Note(None, owner_id, "face", content, datetime(2022, 1, 1, tzinfo=UTC), embedding=vector)
    return int(store.add_note(note).id or 0)


@pytest.fixture(params=["sqlite", "fleet"])
def cli(
    request: pytest.FixtureRequest, base_config: KioskConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """The CLI on the default SQLite file, and on the fleet store (store.url = a PostgreSQL terminal role)."""
    if request.param == "fleet":
        _, terminal_url = request.getfixturevalue("pg_database")
        monkeypatch.setenv("KIOSK_STORE__URL", terminal_url)
    app = typer.Typer()
    groups_cli.register(app)
    memory_cli.register(app)
    home = tmp_path / "home"
    monkeypatch.setenv("KIOSK_HOME", str(home))
    monkeypatch.setenv("KIOSK_PATHS__MODELS_DIR", str(base_config.paths.models))
    monkeypatch.setenv("KIOSK_MEMORY__CONSTRUCTION", "fast")
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    with open_store(load_config(path=None)) as store:
        store.add_user("Ann")
        store.add_user("Bob")
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(app, list(args))

    invoke.open = lambda: open_store(load_config(path=None))  # type: ignore[attr-defined]
    yield invoke


def test_groups_lifecycle(cli: Any) -> None:
    assert cli("groups", "add", "family").exit_code == 0
    assert cli("groups", "add-member", "family", "Ann").exit_code == 0
    listed = cli("groups", "list", "--json")
    assert json.loads(listed.stdout) == [{"id": 3, "name": "family", "members": ["Ann"], "notes": 0}]
    assert cli("groups", "remove-member", "family", "Ann").exit_code == 0
    assert cli("groups", "delete", "family", "--yes").exit_code == 0
    assert json.loads(cli("groups", "list", "--json").stdout) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("groups", "add-member", "friends", "Ann"), "no group named 'friends'"),
        (("groups", "add-member", "family", "Zed"), "no user named 'Zed'"),
        (("groups", "remove-member", "family", "Bob"), "Bob is not a member of family"),
        (("groups", "add", "family"), "group 'family' already exists"),
        (("remember", "hi", "--user", "Ann", "--scope", "persnal"), "unknown scope 'persnal'"),
        (("remember", "hi", "--user", "Ann", "--scope", "group"), "needs the group's name"),
        (("remember", "hi", "--user", "Ann", "--scope", "group:friends"), "no group named 'friends'"),
        (("remember", "hi", "--user", "Bob", "--scope", "group:family"), "Bob is not a member of group 'family'"),
        (("memory", "list", "--scope", "group:friends"), "no group named 'friends'"),
        (("memory", "archive-faded", "--half-life-days", "0", "--floor", "0.1"), "half-life must be a positive"),
        (("memory", "archive-faded", "--half-life-days", "-2"), "half-life must be a positive"),
        (("memory", "restore", "999"), "no note with id 999"),
    ],
)
def test_bad_input_is_one_clear_line(cli: Any, args: tuple[str, ...], message: str) -> None:
    cli("groups", "add", "family")
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.real_models
def test_remember_in_each_scope_then_list(cli: Any) -> None:
    cli("groups", "add", "family")
    cli("groups", "add-member", "family", "Ann")
    for scope in ("personal", "group:family", "public"):
        done = cli("remember", f"a {scope} memory", "--user", "Ann", "--scope", scope, "--json")
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["note"]["scope"] == scope
    family = json.loads(cli("memory", "list", "--scope", "group:family", "--json").stdout)
    assert [n["content"] for n in family["notes"]] == ["a group:family memory"]
    assert family["notes"][0]["author_id"] == 1
    public = json.loads(cli("memory", "list", "--scope", "public", "--json").stdout)
    assert [n["content"] for n in public["notes"]] == ["a public memory"]
    personal = json.loads(cli("memory", "list", "--user", "Ann", "--json").stdout)
    assert [n["content"] for n in personal["notes"]] == ["a personal memory"]


def test_archive_faded_then_restore(cli: Any) -> None:
    with cli.open() as store:
        note_id = make_old_note(store, store.user_by_name("Ann").id)  # type: ignore[union-attr]
    done = cli("memory", "archive-faded", "--floor", "0.5", "--half-life-days", "30", "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["archived"] == [note_id]
    listed = cli("memory", "list", "--user", "Ann")
    assert "(archived)" in listed.output
    assert cli("memory", "restore", str(note_id)).exit_code == 0
    with cli.open() as store:
        note = store.get_note(note_id)
        assert note is not None and not note.archived and note.last_used_at is not None
        assert note.last_used_at > datetime(2026, 1, 1, tzinfo=UTC)
    again = cli("memory", "restore", str(note_id))
    assert again.exit_code == 2 and "is not archived" in again.output
