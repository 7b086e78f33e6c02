"""The memory store fixtures, parametrised over both backends: every test taking one runs on each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from stores import BACKENDS, Opener, open_store, store_opener

from kiosk.memory import Store


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(request, tmp_path)
    yield opened
    opened.close()


@pytest.fixture(params=BACKENDS)
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the backend's one database, as often as a test needs (with or without a master key)."""
    return store_opener(request, tmp_path)
