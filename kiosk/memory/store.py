"""The memory store that retrieval, identity, the UI and evaluation program against: every port of
kiosk/memory/ports.py on one database."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from kiosk.memory.ports import Identities, LexicalIndex, LinksAndHistory, Notes, VectorIndex


class Store(Identities, Notes, VectorIndex, LexicalIndex, LinksAndHistory, Protocol):
    def close(self) -> None: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *exc: object) -> None: ...


def owner_scope(store: object, owner_ids: Sequence[int]) -> AbstractContextManager[None]:
    """Scope a gated request to the gate's owners where the backend enforces it in the database (the fleet
    store's row-level security: even id-based calls then see no other owner's rows); a no-op on SQLite."""
    scope = getattr(store, "owner_scope", None)
    return scope(owner_ids) if scope is not None else contextlib.nullcontext()


@runtime_checkable
class SensitiveIndex(Protocol):
    """Stores that keep note sensitivity: SQLite (schema v4) and the fleet store (pg schema v2)."""

    def sensitive_note_ids(self, owner_ids: Sequence[int]) -> set[int]: ...
