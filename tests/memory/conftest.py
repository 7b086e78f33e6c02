"""The memory store fixture, parametrised over both backends: every test taking `store` runs on each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from stores import BACKENDS, open_store

from kiosk.memory import Store


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(request, tmp_path)
    yield opened
    opened.close()
