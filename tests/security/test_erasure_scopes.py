"""Forget-me covers every note the person wrote, in any scope (issue #34, point 1).

A person's group and public notes are stored under the group's / the public pseudo-owner with `author_id` naming
them. Erasing the person must erase those notes too (rows, vectors, lexical entries, links, history), leave no
byte of their text or index tokens in the database, its WAL or shared memory, and evict cached pools holding
them; notes other people wrote in the same group stay.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from memory.builders import count_rows, make_note
from memory.test_erasure import found
from stores import BACKENDS, open_store

from kiosk.app.memories import forget_cached_person
from kiosk.assistant import Assistant
from kiosk.config import RetrievalConfig
from kiosk.memory import SqliteStore, Store
from kiosk.memory.note import Note
from kiosk.retrieval.retriever import Retriever
from kiosk.security.sealing import MasterKey, new_key

GROUP_SECRET = "Ann's biopsy result from the QUOKKAVILLE clinic came back"
PUBLIC_SECRET = "Ann says the side gate code is ZANZIBARITE"
GROUP_TOKEN = b"quokkavil"  # a porter stem the lexical index stores (owner-prefixed)
PUBLIC_TOKEN = b"zanzibarit"
BOB_GROUP_NOTE = "Bob will bring the WOMBATSTEW to the family dinner"


def populated(store: Store) -> dict[str, int]:
    """Ann and Bob in group 'family'; Ann wrote a personal, a group and a public note, Bob a group note."""
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    family = store.add_group("family").id
    store.add_member(family, ann)
    store.add_member(family, bob)
    public = store.public_owner_id()
    assert public is not None
    store.add_note(make_note(ann, "Ann's own diary entry", seed=1))
    group_note = store.add_note(make_note(family, GROUP_SECRET, seed=2, author_id=ann, keywords=["QUOKKAVILLE"]))
    helper = store.add_note(make_note(family, "Ann added a follow-up for the family", seed=3, author_id=ann))
    store.add_link(int(group_note.id or 0), int(helper.id or 0), "related")
    changed: Note = group_note
    changed.context = "QUOKKAVILLE follow-up"
    store.update_note(changed, "evolve")  # a history entry carries the text too
    store.add_note(make_note(public, PUBLIC_SECRET, seed=4, author_id=ann))
    store.add_note(make_note(family, BOB_GROUP_NOTE, seed=5, author_id=bob))
    return {"ann": ann, "bob": bob, "family": family, "public": public, "group_note": int(group_note.id or 0)}


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(request, tmp_path)
    yield opened
    opened.close()


def test_forget_me_removes_the_persons_group_and_public_notes(any_store: Store) -> None:
    store = any_store
    ids = populated(store)
    store.delete_user(ids["ann"])

    shared = store.list_notes(ids["family"]) + store.list_notes(ids["public"])
    assert [n.content for n in shared] == [BOB_GROUP_NOTE]
    assert store.get_note(ids["group_note"]) is None
    assert store.lexical([ids["family"], ids["public"]], "quokkaville zanzibarite", 10) == []
    assert [n for n, _ in store.knn([ids["family"], ids["public"]], make_note(0, seed=2).embedding, 5)] == [
        shared[0].id
    ]
    assert count_rows(store, "notes", "WHERE author_id IS NULL AND owner_id <> ?", (ids["bob"],)) == 0
    assert count_rows(store, "history") == 0 and count_rows(store, "links") == 0
    assert [u.name for u in store.members(ids["family"])] == ["Bob"]


@pytest.mark.parametrize("sealed", [False, True], ids=["clear", "sealed"])
def test_no_byte_of_a_forgotten_persons_shared_notes_stays_in_db_wal_or_shm(tmp_path: Path, sealed: bool) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path, master_key=MasterKey(new_key(), "test") if sealed else None)
    ids = populated(store)
    assert found(path, GROUP_TOKEN) and found(path, PUBLIC_TOKEN), "control: the FTS index holds the tokens"
    if not sealed:
        assert found(path, b"QUOKKAVILLE") and found(path, b"ZANZIBARITE"), "control: the scan sees clear text"

    store.delete_user(ids["ann"])

    for needle in (b"QUOKKAVILLE", b"ZANZIBARITE", GROUP_TOKEN, PUBLIC_TOKEN, b"biopsy", b"side gate code"):
        assert found(path, needle) == [], needle
    assert store.lexical([ids["family"]], "wombatstew", 10) != []  # Bob's group note is intact
    assert store._query("PRAGMA freelist_count")[0][0] == 0
    assert store.integrity_check() == "ok"
    store.close()


def test_erasure_evicts_cached_pools_of_the_groups_and_public_scope(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "memory.db")
    ids = populated(store)
    retriever = Retriever(store, RetrievalConfig())
    bobs_pool = retriever.pool((ids["bob"], ids["family"], ids["public"]))  # cached: holds Ann's group note
    assert ids["group_note"] in set(bobs_pool.ids.tolist())
    store.delete_user(ids["ann"])

    forget_cached_person(cast(Assistant, SimpleNamespace(store=store, retriever=retriever)), ids["ann"])

    assert retriever._pools.discard_owner(ids["family"]) == 0, "a pool holding Ann's erased note stayed in RAM"
    assert ids["group_note"] not in set(retriever.pool((ids["bob"], ids["family"], ids["public"])).ids.tolist())
    store.close()
