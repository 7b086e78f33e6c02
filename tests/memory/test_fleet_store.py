"""A terminal on the fleet store that loses the database: it queues notes locally and syncs them, once each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import StoreError
from kiosk.memory.fleet_store import FleetStore
from kiosk.memory.pg_local import LocalCluster
from kiosk.memory.postgres_store import StoreUnavailable

from .builders import make_note, unit


def test_offline_terminal_queues_notes_and_syncs_each_once(
    pg_cluster: LocalCluster, pg_database: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, terminal_url = pg_database
    store = FleetStore(terminal_url, tmp_path / "queue.db", retry_after_s=0)
    ann = store.add_user("Ann").id
    store.set_templates(ann, "face", unit(1, 512), "sha")
    online = [store.add_note(make_note(ann, f"online {i}", seed=i)).id for i in range(3)]
    assert None not in online
    assert len(store.templates("face")) == 1 and [u.name for u in store.list_users()] == ["Ann"]

    pg_cluster.stop()
    try:
        queued = [store.add_note(make_note(ann, f"offline {i}", seed=10 + i)) for i in range(5)]
        assert all(note.id is None for note in queued) and store.pending == 5
        # The gate still verifies people from the last templates seen; reading memory says it is offline.
        assert [t.user_id for t in store.templates("face")] == [ann]
        assert store.get_user(ann) is not None and store.user_by_name("Ann") is not None
        with pytest.raises(StoreUnavailable):
            store.knn([ann], unit(1), 3)
        with pytest.raises(StoreUnavailable):
            store.sync()
        # A second terminal process reopening the same queue file after a restart sees the same backlog.
        assert FleetStore(terminal_url, tmp_path / "queue.db").pending == 5
    finally:
        pg_cluster.start()

    # The connection returns; the first sync dies after the database stored a note but before the queue
    # forgot it (a crash between the two): the re-sent key must not store it twice.
    real_remove = store.queue.remove
    calls = {"n": 0}

    def crash_after_first_commit(key: str) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise StoreUnavailable("simulated crash between commit and dequeue")
        real_remove(key)

    monkeypatch.setattr(store.queue, "remove", crash_after_first_commit)
    with pytest.raises(StoreUnavailable, match="simulated"):
        store.sync()
    monkeypatch.setattr(store.queue, "remove", real_remove)
    assert store.pending == 4
    assert store.sync() == 4 and store.pending == 0

    contents = sorted(n.content for n in store.list_notes(ann))
    assert contents == sorted([f"online {i}" for i in range(3)] + [f"offline {i}" for i in range(5)])
    offline = [n for n in store.list_notes(ann) if n.content.startswith("offline")]
    assert all(np.allclose(n.embedding, unit(10 + i)) for i, n in enumerate(sorted(offline, key=lambda n: n.content)))
    # Later writes go straight to the database again.
    assert store.add_note(make_note(ann, "back online", seed=99)).id is not None and store.pending == 0
    store.close()


def test_a_terminal_that_starts_offline_works_from_its_queue(tmp_path: Path) -> None:
    store = FleetStore("postgresql://kiosk@127.0.0.1:1/none", tmp_path / "queue.db", retry_after_s=60)
    assert store.list_users() == [] and store.templates() == []
    assert store.add_note(make_note(1, "remembered offline")).id is None and store.pending == 1
    with pytest.raises(StoreUnavailable, match="unreachable"):
        store.add_user("Ann")
    store.close()


@pytest.mark.real_models
def test_remembering_on_an_offline_terminal_queues_the_built_note(
    tmp_path: Path, text_encoder: object, config: KioskConfig
) -> None:
    from datetime import UTC, datetime

    from kiosk.memory import User
    from kiosk.memory.build import NoteBuilder
    from kiosk.memory.ingest import remember

    store = FleetStore("postgresql://kiosk@127.0.0.1:1/none", tmp_path / "queue.db", retry_after_s=60)
    builder = NoteBuilder(store, text_encoder, config.memory, None)
    ann = User(1, "Ann", datetime(2024, 1, 1, tzinfo=UTC))
    report = remember(builder, ann, "My locker code is 4512.", mode="fast")
    assert report.note.id is None and store.pending == 1
    ((_, queued),) = store.queue.pending()
    assert queued.content == "My locker code is 4512." and queued.keywords and queued.embedding is not None
    store.close()


def test_offline_scopes_and_sensitivity_survive_the_queue_on_a_sealed_store(
    pg_cluster: LocalCluster, pg_database: tuple[str, str], tmp_path: Path
) -> None:
    from kiosk.memory.scopes import Scope, owner_for
    from kiosk.security.sealing import MasterKey, new_key

    _, terminal_url = pg_database
    store = FleetStore(terminal_url, tmp_path / "queue.db", retry_after_s=0, master_key=MasterKey(new_key(), "t"))
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    family = store.add_group("family").id
    store.add_member(family, ann)
    store.set_templates(ann, "face", unit(1, 512), "sha")
    assert len(store.templates("face")) == 1  # cached for the gate offline
    # What a gated request reads online is what the terminal can answer offline.
    assert [g.id for g in store.groups_of(ann)] == [family] and store.groups_of(bob) == []
    public = store.public_owner_id()
    assert [g.name for g in store.list_groups()] == ["family"] and [u.id for u in store.members(family)] == [ann]
    assert [u.name for u in store.list_users()] == ["Ann", "Bob"]

    pg_cluster.stop()
    try:
        assert [g.id for g in store.groups_of(ann)] == [family] and store.groups_of(bob) == []
        assert store.public_owner_id() == public
        owner = owner_for(store, Scope("group", "family"), ann)  # membership checked from the cache
        assert owner == family
        with pytest.raises(StoreError, match="Bob is not a member"):
            owner_for(store, Scope("group", "family"), bob)
        queued = store.add_note(
            make_note(owner, "grandma's pills at eight", seed=3, author_id=ann, sensitivity="health")
        )
        assert queued.id is None and store.pending == 1
        # Sealed at rest on the terminal too while it waits: no note text or template in the queue files.
        raw = b"".join(p.read_bytes() for p in tmp_path.glob("queue.db*"))
        assert b"grandma" not in raw
        assert unit(1, 512).astype(np.float32).tobytes()[:64] not in raw
        assert [t.user_id for t in store.templates("face")] == [ann]  # the cached template opens with the key
    finally:
        pg_cluster.start()

    assert store.sync() == 1
    (synced,) = store.list_notes(family)
    assert synced.content == "grandma's pills at eight" and synced.sensitivity == "health"
    assert synced.author_id == ann and synced.scope == "group:family"
    assert store.sensitive_note_ids([family]) == {synced.id}
    store.close()
