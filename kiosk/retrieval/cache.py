"""Short-lived caches keyed by who was matched, checked against the owners' write counters."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kiosk.memory.store import Store

V = TypeVar("V")


def owner_versions(store: Store, owner_ids: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple((owner, store.owner_version(owner)) for owner in sorted(set(owner_ids)))


@dataclass
class _Entry(Generic[V]):
    value: V
    versions: tuple[tuple[int, int], ...]
    stored_at: float


class VersionedCache(Generic[V]):
    """A small LRU whose entries expire after `ttl_s` (None: never) or when any owner's version moves.

    Any write to an owner's notes or templates bumps `store.owner_version`, so a cached result can never
    outlive a change to the memories (or the identity) it was computed from.
    """

    def __init__(self, ttl_s: float | None, capacity: int = 64, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry[V]] = OrderedDict()
        self._lock = threading.Lock()  # the UI's worker threads and the main thread may share one retriever

    @property
    def enabled(self) -> bool:
        return self.ttl_s is None or self.ttl_s > 0

    def get(self, key: Hashable, versions: tuple[tuple[int, int], ...]) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expired = self.ttl_s is not None and self._clock() - entry.stored_at > self.ttl_s
            if expired or entry.versions != versions:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry.value

    def put(self, key: Hashable, versions: tuple[tuple[int, int], ...], value: V) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._entries[key] = _Entry(value, versions, self._clock())
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def discard_owner(self, owner_id: int) -> int:
        """Drop every entry computed from this owner's memories (erasure: not even a stale copy stays in RAM)."""
        with self._lock:
            doomed = [key for key, entry in self._entries.items() if any(o == owner_id for o, _ in entry.versions)]
            for key in doomed:
                del self._entries[key]
            return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
