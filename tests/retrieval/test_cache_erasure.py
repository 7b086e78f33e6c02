"""Erasure reaches the retrieval caches: forgetting an owner drops every cached result built from their notes."""

from __future__ import annotations

from kiosk.retrieval.cache import VersionedCache


def test_discard_owner_drops_only_entries_that_include_that_owner() -> None:
    cache: VersionedCache[str] = VersionedCache(None)
    cache.put("ann", ((1, 3),), "ann's notes")
    cache.put("ann+group", ((1, 3), (7, 1)), "ann's and the group's notes")
    cache.put("bob", ((2, 5),), "bob's notes")
    assert cache.discard_owner(1) == 2
    assert cache.get("ann", ((1, 3),)) is None and cache.get("ann+group", ((1, 3), (7, 1))) is None
    assert cache.get("bob", ((2, 5),)) == "bob's notes"
