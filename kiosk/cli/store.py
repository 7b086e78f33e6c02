"""`kiosk store migrate`: move a terminal's SQLite memory into the fleet store (PostgreSQL + pgvector)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer

from kiosk.cli.common import JsonOption, emit, handle_errors
from kiosk.errors import ConfigError, StoreError
from kiosk.security.sealing import MasterKey

T = TypeVar("T")

store_app = typer.Typer(help="The memory store backend: SQLite on one terminal, or the fleet store on PostgreSQL.")


@handle_errors
def migrate_cmd(
    source: str = typer.Option(..., "--from", help="The terminal's memory: sqlite:PATH."),
    target: str = typer.Option(..., "--to", help="The fleet store: postgresql://USER:PASSWORD@HOST:PORT/DB."),
    as_json: bool = JsonOption,
) -> None:
    """Copy users, templates, groups, memberships, notes (scope, strength, archive, sensitivity), links and
    history; safe to re-run (nothing is stored twice); verifies counts. A sealed terminal memory or fleet store
    is opened with the configured master key (the fleet's key, security.key_file)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from kiosk.memory.migrate import migrate
    from kiosk.memory.open import POSTGRES_SCHEMES, describe_url, sqlite_path
    from kiosk.memory.postgres_store import PostgresStore
    from kiosk.memory.sqlite_store import SqliteStore

    if not source.startswith("sqlite:"):
        raise ConfigError(f"--from must be sqlite:PATH, not '{source}'", "name the terminal's memory.db")
    if not target.startswith(POSTGRES_SCHEMES):
        raise ConfigError(f"--to must be a postgresql:// URL, not '{describe_url(target)}'", "see --help")
    path = sqlite_path(source)
    if not path.is_file():
        raise StoreError(f"no memory database at {path}", "give the path of an existing memory.db")
    with (
        _sealed_or_clear(lambda key: SqliteStore(path, master_key=key)) as old,
        _sealed_or_clear(lambda key: PostgresStore(target, master_key=key), old.encrypted) as fleet,
    ):
        columns = (TextColumn("migrating notes"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, transient=as_json, disable=as_json) as bar:
            task = bar.add_task("notes", total=None)
            report = migrate(old, fleet, lambda done, total: bar.update(task, completed=done, total=total))
    payload = {"from": str(path), "to": describe_url(target), **report.as_dict()}

    def human(r: dict[str, object]) -> str:
        return (
            f"{r['notes_copied']} notes copied, {r['notes_already_there']} already there "
            f"({len(r['users_created'])} users created, {len(r['users_merged'])} merged by name)\n"  # type: ignore[arg-type]
            f"verified: {r['verified_notes']}/{r['notes_total']} notes, "
            f"{r['verified_links']}/{r['links_total']} links and "
            f"{r['verified_memberships']}/{r['memberships_total']} group memberships in the fleet store"
        )

    emit(payload, as_json, human)
    if not report.verified:
        raise typer.Exit(1)


def _sealed_or_clear(open_with: Callable[[MasterKey | None], T], sealed: bool = False) -> T:
    """Open in clear unless `sealed` or the store says it is encrypted; then with the configured master key
    (no key file is made for a migration between clear stores)."""
    from kiosk.cli.common import config
    from kiosk.security.sealing import master_key_for

    if not sealed:
        try:
            return open_with(None)
        except StoreError as exc:
            if "encrypted" not in exc.message:
                raise
    cfg = config()
    return open_with(master_key_for(cfg.security, cfg.paths.data_dir))


store_app.command("migrate")(migrate_cmd)


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")
