"""The retrieval tests' shared store: an in-memory SQLite memory, fresh for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kiosk.memory import SqliteStore


@pytest.fixture()
def store() -> Iterator[SqliteStore]:
    with SqliteStore(":memory:") as opened:
        yield opened
