"""The contract of the memory store: one suite, run against both adapters (SQLite + sqlite-vec and PostgreSQL +
pgvector through a terminal role under row-level security; tests/memory/conftest.py). A test here states what
every `kiosk.memory.store.Store` does, port by port; what one adapter alone does is in test_sqlite_store.py or
test_postgres_store.py."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from stores import Opener

from kiosk.errors import KioskError, StoreError
from kiosk.memory import Link, Note, SqliteStore, Store
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.security.sealing import MasterKey, new_key

from .builders import count_rows, make_note, unit

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SECRET = "my locker code is 4417-PELICAN"


@pytest.fixture()
def master() -> MasterKey:
    return MasterKey(new_key(), "test")


def _note(owner: int, content: str, keywords: list[str] | None = None) -> Note:
    vector = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    vector[0] = 1.0
    return Note(
        id=None,
        owner_id=owner,
        modality="face",
        content=content,
        timestamp=WHEN,
        keywords=keywords or [],
        embedding=vector,
    )


# ---- identities ------------------------------------------------------------------------------------------------------


def test_users_roundtrip_and_duplicates(store: Store) -> None:
    ann = store.add_user("Ann")
    assert store.get_user(ann.id) == ann
    assert store.user_by_name(" Ann ") == ann
    with pytest.raises(StoreError, match="already exists"):
        store.add_user("Ann")
    with pytest.raises(StoreError, match="non-empty"):
        store.add_user("  ")
    bob = store.add_user("Bob")
    assert [u.name for u in store.list_users()] == ["Ann", "Bob"]
    assert store.get_user(bob.id + 100) is None


def test_templates_replace_per_modality_and_keep_notes(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "keep me"))
    store.set_templates(ann, "face", np.stack([unit(1, 512), unit(2, 512)]), "sha-a")
    store.set_templates(ann, "palm", unit(3, 256), "sha-p")
    replaced = store.set_templates(ann, "face", np.stack([unit(4, 512)]), "sha-b")
    faces = store.templates("face")
    assert [t.id for t in faces] == [t.id for t in replaced]
    assert faces[0].model_sha256 == "sha-b" and np.allclose(faces[0].vector, unit(4, 512))
    assert len(store.templates()) == 2
    assert store.get_note(note.id or 0) is not None
    with pytest.raises(StoreError, match="zeros"):
        store.set_templates(ann, "face", np.zeros((1, 512)), "sha")


def test_delete_user_cascades_everything(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    notes = [store.add_note(make_note(ann, f"a{i}", seed=i)) for i in range(3)]
    store.add_link(notes[0].id or 0, notes[1].id or 0, "related")
    store.update_note(notes[2], reason="touch")
    bob_note = store.add_note(make_note(bob, "bob", seed=9))
    store.set_templates(ann, "face", unit(1, 512), "sha")
    version = store.owner_version(ann)
    store.delete_user(ann)
    assert store.get_user(ann) is None
    assert store.count_notes() == 1 and store.templates() == []
    for table in ("links", "history"):
        assert count_rows(store, table) == 0
    assert count_rows(store, "note_vectors") == 1
    assert store.knn([bob], unit(9), 3)[0][0] == bob_note.id
    assert store.owner_version(ann) > version
    if isinstance(store, SqliteStore):
        assert store.integrity_check() == "ok"


def test_groups_members_and_one_public_owner(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    zoo, family = store.add_group("zoo"), store.add_group(" family ")
    assert family.name == "family" and store.group_by_name("family") == family == store.get_group(family.id)
    assert [g.name for g in store.list_groups()] == ["family", "zoo"] and store.get_group(ann) is None
    store.add_member(family.id, ann)
    store.add_member(family.id, ann)  # once is enough
    assert [u.id for u in store.members(family.id)] == [ann] and store.members(zoo.id) == []
    assert store.groups_of(ann) == [family] and store.groups_of(bob) == []
    public = store.public_owner_id()
    assert public is not None and store.public_owner_id() == public
    assert public not in {u.id for u in store.list_users()} | {g.id for g in store.list_groups()}
    with pytest.raises(StoreError, match="already exists"):
        store.add_group("family")
    with pytest.raises(StoreError, match="scope name"):
        store.add_user("group:family")
    with pytest.raises(StoreError, match="no group"):
        store.add_member(bob, ann)
    with pytest.raises(StoreError, match="no user"):
        store.add_member(family.id, zoo.id)
    store.remove_member(family.id, ann)
    with pytest.raises(StoreError, match="not a member"):
        store.remove_member(family.id, ann)


# ---- notes -----------------------------------------------------------------------------------------------------------


def test_note_crud_roundtrip(store: Store) -> None:
    ann = store.add_user("Ann")
    note = make_note(
        ann.id,
        "I adopted a dog",
        seed=1,
        keywords=["dog"],
        tags=["pets"],
        context="Ann on pets",
        source="import",
        source_ref="D1:1",
    )
    stored = store.add_note(note)
    assert stored.id is not None and stored.created_at is not None
    got = store.get_note(stored.id)
    assert got is not None
    assert (got.content, got.keywords, got.tags, got.context, got.source_ref) == (
        "I adopted a dog",
        ["dog"],
        ["pets"],
        "Ann on pets",
        "D1:1",
    )
    assert got.timestamp == note.timestamp and got.timestamp.tzinfo is not None
    assert got.embedding is not None and np.allclose(got.embedding, note.embedding)
    assert store.source_refs(ann.id) == {"D1:1"}

    got.tags = ["pets", "family"]
    updated = store.update_note(got, reason="evolution")
    assert updated.tags == ["pets", "family"]
    (entry,) = store.history(stored.id)
    assert entry.reason == "evolution"
    assert entry.before == {"tags": ["pets"]} and entry.after == {"tags": ["pets", "family"]}

    store.delete_note(stored.id)
    assert store.get_note(stored.id) is None
    assert store.history(stored.id) == []
    assert store.knn([ann.id], unit(1), 5) == []
    with pytest.raises(StoreError, match="no note"):
        store.delete_note(stored.id)


def test_bad_notes_are_rejected_clearly(store: Store) -> None:
    ann = store.add_user("Ann")
    with pytest.raises(StoreError, match="non-empty"):
        store.add_note(make_note(ann.id, "   "))
    with pytest.raises(StoreError, match="no user"):
        store.add_note(make_note(ann.id + 7))
    bad = make_note(ann.id)
    bad.embedding = np.full(384, np.nan, dtype=np.float32)
    with pytest.raises(StoreError, match="NaN"):
        store.add_note(bad)
    bad.embedding = np.ones(10, dtype=np.float32)
    with pytest.raises(StoreError, match="shape"):
        store.add_note(bad)
    naive = make_note(ann.id)
    naive.timestamp = datetime(2023, 1, 1)
    with pytest.raises(ValueError, match="timezone"):
        store.add_note(naive)
    assert store.count_notes() == 0


def test_list_is_chronological_and_paged(store: Store) -> None:
    ann = store.add_user("Ann")
    for minutes in (30, 10, 20):
        store.add_note(make_note(ann.id, f"at {minutes}", seed=minutes, minutes=minutes))
    assert [n.content for n in store.list_notes(ann.id)] == ["at 10", "at 20", "at 30"]
    assert [n.content for n in store.list_notes(ann.id, limit=1, offset=1)] == ["at 20"]
    assert store.count_notes(ann.id) == 3


def test_update_cannot_move_a_note_to_another_owner(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    note = store.add_note(make_note(ann, "mine"))
    note.owner_id = bob
    with pytest.raises(StoreError, match="belongs to user"):
        store.update_note(note, reason="steal")


def test_timestamps_are_utc(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann))
    assert note.timestamp.tzinfo is not None and note.timestamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert note.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_get_notes_keeps_the_order_asked_and_skips_missing_ids(store: Store) -> None:
    ann = store.add_user("Ann").id
    first, second = (store.add_note(make_note(ann, text, seed=i)) for i, text in enumerate(("one", "two")))
    assert first.id and second.id
    assert [n.id for n in store.get_notes([second.id, second.id + 50, first.id])] == [second.id, first.id]
    assert store.get_notes([]) == [] and store.get_note(second.id + 50) is None
    assert store.count_notes() == 2 and store.count_notes(ann + 50) == 0 and store.source_refs(ann) == set()


def test_sensitivity_is_stored_checked(store: Store) -> None:
    ann = store.add_user("Ann").id
    marked = store.add_note(make_note(ann, "my pin is 1234", sensitivity="credentials"))
    unmarked = store.add_note(make_note(ann, "nice weather", seed=1, sensitivity="none"))
    assert marked.sensitivity == "credentials" and unmarked.sensitivity is None
    assert store.sensitive_note_ids([ann]) == {marked.id} and store.sensitive_note_ids([]) == set()
    with pytest.raises(StoreError, match="unknown sensitivity"):
        store.add_note(make_note(ann, "typo", sensitivity="helth"))


# ---- vector index ----------------------------------------------------------------------------------------------------


def test_knn_is_restricted_to_owners_and_exact(store: Store) -> None:
    users = [store.add_user(f"user{i}").id for i in range(4)]
    vectors: dict[int, tuple[int, np.ndarray]] = {}
    for i in range(120):
        owner = users[i % 4]
        note = store.add_note(make_note(owner, f"n{i}", seed=1000 + i))
        assert note.id is not None and note.embedding is not None
        vectors[note.id] = (owner, note.embedding)
    query = unit(5)
    allowed = [users[1], users[3]]
    got = store.knn(allowed, query, 7)
    reference = sorted(
        ((nid, float(vec @ query)) for nid, (owner, vec) in vectors.items() if owner in allowed),
        key=lambda p: -p[1],
    )[:7]
    assert [nid for nid, _ in got] == [nid for nid, _ in reference]
    assert np.allclose([s for _, s in got], [s for _, s in reference], atol=1e-5)
    assert all(vectors[nid][0] in allowed for nid, _ in store.knn(allowed, query, 60))
    assert store.knn([], query, 5) == []
    with pytest.raises(StoreError, match="out of range"):
        store.knn(allowed, query, 0)


def test_knn_k_is_bounded_by_the_ports_max_k(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "x", seed=1))
    assert store.max_k == 4096
    ((found, similarity),) = store.knn([ann], unit(1), store.max_k)
    assert found == note.id and similarity == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(StoreError, match="out of range"):
        store.knn([ann], unit(1), store.max_k + 1)
    with pytest.raises(StoreError, match="zeros"):
        store.knn([ann], np.zeros(EMBEDDING_DIM, dtype=np.float32), 1)


def test_owner_matrix_and_versions(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    v0 = store.owner_version(ann)
    first = store.add_note(make_note(ann, "later", seed=1, minutes=5))
    second = store.add_note(make_note(ann, "earlier", seed=2, minutes=1))
    store.add_note(make_note(bob, "bob", seed=3))
    ids, stamps, matrix = store.owner_matrix([ann])
    assert ids.tolist() == [second.id, first.id]
    assert stamps.dtype == np.float64 and stamps[0] < stamps[1]
    assert matrix.shape == (2, 384) and matrix.dtype == np.float32
    assert np.allclose(matrix[0], unit(2))
    v1 = store.owner_version(ann)
    assert v1 == v0 + 2
    bob_version = store.owner_version(bob)
    store.set_templates(ann, "face", np.stack([unit(9, 512)]), "sha")
    assert store.owner_version(ann) == v1 + 1
    assert store.owner_version(bob) == bob_version
    empty = store.owner_matrix([])
    assert empty[0].shape == (0,) and empty[2].shape == (0, 384)


def test_reembedding_moves_the_vector(store: Store) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "x", seed=1))
    store.add_note(make_note(ann, "y", seed=2))
    note.embedding = unit(50)
    store.update_note(note, reason="re-encode")
    assert store.knn([ann], unit(50), 1)[0][0] == note.id
    assert store.history(note.id or 0)[0].after == {"embedding": "re-encoded"}


# ---- links and history -----------------------------------------------------------------------------------------------


def test_links_bidirectional_same_owner_and_cleaned_on_delete(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    a = store.add_note(make_note(ann, "a", seed=1))
    b = store.add_note(make_note(ann, "b", seed=2))
    c = store.add_note(make_note(ann, "c", seed=3, links=[Link(a.id or 0, "related")]))
    other = store.add_note(make_note(bob, "x", seed=4))
    assert a.id and b.id and c.id and other.id
    store.add_link(a.id, b.id, "related")
    assert store.links(a.id) == [Link(b.id, "related"), Link(c.id, "related")]
    assert store.links(b.id) == [Link(a.id, "related")]
    with pytest.raises(StoreError, match="different users"):
        store.add_link(a.id, other.id, "related")
    store.delete_note(a.id)
    assert store.links(b.id) == [] and store.links(c.id) == []
    assert count_rows(store, "links", "WHERE source_id = ? OR target_id = ?", (a.id, a.id)) == 0


# ---- lexical index ---------------------------------------------------------------------------------------------------


def test_lexical_is_restricted_to_the_owners_and_ranks_matches(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    pottery = store.add_note(_note(ann, "I signed up for a pottery class on Tuesdays.")).id
    store.add_note(_note(ann, "We went hiking last weekend."))
    tagged = store.add_note(_note(ann, "It was relaxing.", keywords=["pottery"])).id
    bobs = store.add_note(_note(bob, "My pottery class starts soon.")).id

    found = [note_id for note_id, _ in store.lexical([ann], "When is Ann's pottery class?", 10)]
    assert found[0] == pottery and tagged in found and bobs not in found
    assert [note_id for note_id, _ in store.lexical([bob], "pottery", 10)] == [bobs]
    assert store.lexical([ann], "the and of", 10) == []  # stop words only: nothing to look for
    assert store.lexical([], "pottery", 10) == []
    assert len(store.lexical([ann], "pottery class hiking", 1)) == 1
    with pytest.raises(StoreError, match="out of range"):
        store.lexical([ann], "pottery", 0)
    assert len(store.lexical([ann], "pottery", store.max_k + 1)) == 2  # no bound of its own


# ---- sealing at rest ---------------------------------------------------------------------------------------------


def test_a_sealed_store_round_trips_rekeys_and_needs_its_key(open_backend: Opener, master: MasterKey) -> None:
    template = unit(7, dim=128)
    with open_backend(master_key=master) as store:
        ann = store.add_user("Ann").id
        store.set_templates(ann, "face", template[None, :], "sha")
        note = store.add_note(make_note(ann, SECRET, keywords=["PELICAN-KW"], tags=["TAG"], context="CTX"))
        assert note.id is not None and store.encrypted and store.key_generation(ann) == 1
        note.content = "edited"
        store.update_note(note, "edit")
        assert store.rekey_user(ann) == 2
        store.set_templates(ann, "face", template[None, :] * 2, "sha")  # re-enrollment re-keys too
        assert store.key_generation(ann) == 3
    with open_backend(master_key=master) as reopened:
        got = reopened.get_note(note.id)
        assert got is not None and (got.content, got.keywords, got.tags, got.context) == (
            "edited",
            ["PELICAN-KW"],
            ["TAG"],
            "CTX",
        )
        assert reopened.history(note.id)[0].before == {"content": SECRET}
        np.testing.assert_allclose(reopened.templates("face")[0].vector, template * 2)
        assert reopened.seal_plaintext_rows() == 0
    with pytest.raises(StoreError, match="encrypted"):
        open_backend()
    with pytest.raises(KioskError, match="another master key"):
        open_backend(master_key=MasterKey(new_key(), "other"))


def test_a_clear_database_is_sealed_in_place_on_the_first_keyed_open(open_backend: Opener, master: MasterKey) -> None:
    with open_backend() as clear:
        ann = clear.add_user("Ann").id
        clear.set_templates(ann, "palm", unit(3, dim=64)[None, :], "sha")
        note = clear.add_note(make_note(ann, SECRET, keywords=["kw"]))
        assert note.id is not None and not clear.encrypted and clear.key_generation(ann) == 0
        note.context = "said in clear"
        clear.update_note(note, "edit")
    with open_backend(master_key=master) as sealed:
        assert sealed.seal_plaintext_rows() == 0  # the open sealed everything already
        got = sealed.get_note(note.id)
        assert got is not None and got.content == SECRET and got.keywords == ["kw"]
        assert sealed.history(note.id)[0].after == {"context": "said in clear"}
        np.testing.assert_allclose(sealed.templates("palm")[0].vector, unit(3, dim=64))
        assert count_rows(sealed, "templates", "WHERE length(vector) = dimension * 4") == 0


# ---- a person's sensitivity mark -----------------------------------------------------------------------------------


def test_a_mark_by_hand_protects_the_note_survives_rewrites_and_unmarks(
    open_backend: Opener, master: MasterKey
) -> None:
    with open_backend(master_key=master) as store:
        ann = store.add_user("Ann").id
        note = store.add_note(make_note(ann, "the pottery studio door code is 4417", keywords=["kiln"]))
        other = store.add_note(make_note(ann, "pottery class on Tuesday", seed=2))
        assert note.id is not None and note.sensitivity is None
        stale = store.get_note(note.id)  # read before the mark, as an evolution step might
        if isinstance(store, SqliteStore):
            store.checkpoint()
            assert store.path is not None and b"studio" in store.path.read_bytes()  # a plain note's stems
        version = store.owner_version(ann)
        marked = store.mark_sensitivity(note.id, "credentials", "owner")
        assert marked.sensitivity == "credentials" and store.sensitive_note_ids([ann]) == {note.id}
        assert (marked.content, marked.keywords) == (note.content, ["kiln"])  # nothing of the note is lost
        assert store.owner_version(ann) > version  # cached results holding it are stale
        assert [i for i, _ in store.lexical([ann], "pottery studio", 10)] == [other.id]  # sealed: stems left
        assert store.history(note.id)[-1].reason == "sensitivity marked by owner"
        assert store.history(note.id)[-1].after == {"sensitivity": "credentials"}
        assert stale is not None
        stale.context = "evolved"
        store.update_note(stale, "evolution: update_neighbor after note 9")
        assert store.get_note(note.id).sensitivity == "credentials"  # type: ignore[union-attr]
        assert "sensitivity" not in store.history(note.id)[-1].after
        if isinstance(store, SqliteStore):
            store.checkpoint()
            assert store.path is not None and b"studio" not in store.path.read_bytes()
    with open_backend(master_key=master) as reopened:
        unmarked = reopened.mark_sensitivity(note.id, None, "admin")
        assert unmarked.sensitivity is None and unmarked.content == note.content and unmarked.context == "evolved"
        assert reopened.sensitive_note_ids([ann]) == set()
        assert {i for i, _ in reopened.lexical([ann], "studio", 10)} == {note.id}  # back in the lexical index
        with pytest.raises(StoreError, match="unknown sensitivity 'secret'"):
            reopened.mark_sensitivity(note.id, "secret", "admin")
        with pytest.raises(StoreError, match="no note with id"):
            reopened.mark_sensitivity(note.id + 100, "health", "admin")
