"""The memory store on either backend, for fixtures parametrised over both (sqlite, postgres)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kiosk.memory import SqliteStore, Store
from kiosk.memory.sql.store import SqlStore
from kiosk.security.sealing import MasterKey

BACKENDS = ["sqlite", "postgres"]

Opener = Callable[..., SqlStore]
"""Opens the backend's one database (again): keyword arguments are the store's (e.g. master_key)."""


def store_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """The database named by the fixture's parameter; PostgreSQL through the terminal role of `pg_database`
    (one throwaway server per test session, one fresh database per test)."""
    if request.param == "sqlite":
        path = tmp_path / "memory.db"

        def sqlite(master_key: MasterKey | None = None) -> SqlStore:
            return SqliteStore(path, master_key=master_key)

        return sqlite
    from kiosk.memory.postgres_store import PostgresStore

    _, terminal_url = request.getfixturevalue("pg_database")

    def postgres(master_key: MasterKey | None = None) -> SqlStore:
        return PostgresStore(terminal_url, master_key=master_key)

    return postgres


def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return store_opener(request, tmp_path)()
