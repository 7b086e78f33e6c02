"""Retrieval's versioned cache: an entry expires with its time to live and with any write to its owners."""

from __future__ import annotations

from kiosk.retrieval.cache import VersionedCache


def test_cache_expires_by_time_and_by_owner_version() -> None:
    now = [0.0]
    cache: VersionedCache[str] = VersionedCache(0.35, clock=lambda: now[0])
    versions = ((1, 4),)
    cache.put("key", versions, "value")
    assert cache.get("key", versions) == "value"
    assert cache.get("key", ((1, 5),)) is None  # a write to owner 1 invalidates
    cache.put("key", versions, "value")
    now[0] = 0.36
    assert cache.get("key", versions) is None  # older than the TTL
    disabled: VersionedCache[str] = VersionedCache(0.0)
    disabled.put("key", versions, "value")
    assert disabled.get("key", versions) is None
