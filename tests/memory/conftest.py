"""The memory store fixture, parametrised over both backends: every test taking `store` runs on each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kiosk.memory import SqliteStore, Store


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened: Store = SqliteStore(tmp_path / "memory.db")
    else:
        from kiosk.memory.postgres_store import PostgresStore

        _, terminal_url = request.getfixturevalue("pg_database")
        opened = PostgresStore(terminal_url)
    yield opened
    opened.close()
