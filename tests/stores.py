"""The memory store on either backend, for fixtures parametrised over both (sqlite, postgres)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.memory import SqliteStore, Store

BACKENDS = ["sqlite", "postgres"]


def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """The store named by the fixture's parameter; PostgreSQL through the terminal role of `pg_database`."""
    if request.param == "sqlite":
        return SqliteStore(tmp_path / "memory.db")
    from kiosk.memory.postgres_store import PostgresStore

    _, terminal_url = request.getfixturevalue("pg_database")
    return PostgresStore(terminal_url)
