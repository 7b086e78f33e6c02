"""Scopes on the real store: groups, membership, and who receives which note (member / non-member / stranger).

Every test taking `store` runs on both backends (tests/memory/conftest.py): SQLite, and PostgreSQL through a
terminal role under row-level security.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from kiosk.config import ForgettingConfig, RetrievalConfig
from kiosk.errors import DataError, StoreError
from kiosk.identity.gate import GateRule, gate
from kiosk.identity.probe import Probe
from kiosk.memory import Note, Store
from kiosk.memory.scopes import PERSONAL, PUBLIC, Scope, owner_for, parse_scope, scope_kind
from kiosk.retrieval import Retriever, scoped_pool
from kiosk.retrieval.ranking import ScopeWeights
from kiosk.retrieval.tuning import RetrievalTuning

from .builders import make_note, unit

SHA = "d" * 64
TAU = 0.6
FACES = {name: np.eye(8, dtype=np.float32)[i] for i, name in enumerate(["Ann", "Bob", "stranger"])}


@dataclass
class Household:
    store: Store
    ann: int
    bob: int
    family: int
    notes: dict[str, int]  # scope -> id of the one note stored in it


def household(store: Store) -> Household:
    """Ann (member of 'family'), Bob (not a member), one note in each scope, all equally near the query."""
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    for user, name in ((ann, "Ann"), (bob, "Bob")):
        store.set_templates(user, "face", FACES[name][None, :], SHA)
    family = store.add_group("family")
    store.add_member(family.id, ann)
    owners = {"personal": ann, "group": family.id, "public": store.public_owner_id()}
    notes = {
        scope: int(store.add_note(make_note(owner, f"a {scope} note", seed=i, author_id=ann)).id or 0)
        for i, (scope, owner) in enumerate(owners.items())
    }
    return Household(store, ann, bob, family.id, notes)


def received(home: Household, asker: str | None) -> set[int]:
    """Note ids a person in front of the camera (None: nobody) receives for a query near every note."""
    probe = None if asker is None else Probe("face", FACES[asker], SHA, captured_at=0.0)
    decision = gate(probe, home.store.templates("face"), GateRule(TAU, "best-match", 0.05))
    pool = scoped_pool(decision, lambda u: [g.id for g in home.store.groups_of(u)], home.store.public_owner_id())
    retriever = Retriever(
        home.store,
        RetrievalConfig(),
        ScopeWeights(),
        ForgettingConfig(),
        RetrievalTuning(cache_ttl_ms=0),
    )
    query = unit(0) + unit(1) + unit(2)
    found = retriever.retrieve(pool.owner_ids, query / np.linalg.norm(query), "q", k=10, scopes=pool.scopes)
    return set(found.note_ids)


# who asks -> which scopes' notes they must receive (and no others)
EXPECTED = {
    "Ann": {"personal", "group", "public"},  # the owner and a member of the group
    "Bob": {"public"},  # a recognised non-member: not Ann's personal note, not the group's
    "stranger": {"public"},  # enrolled nowhere: public notes only
    None: {"public"},  # nobody in view
}


@pytest.mark.parametrize("scope", ["personal", "group", "public"])
@pytest.mark.parametrize("asker", ["Ann", "Bob", "stranger", None])
def test_each_scope_reaches_exactly_its_readers(store: Store, asker: str | None, scope: str) -> None:
    home = household(store)
    got = received(home, asker)
    assert (home.notes[scope] in got) == (scope in EXPECTED[asker])
    assert got <= set(home.notes.values())


def test_leaving_a_group_closes_it_and_joining_opens_it(store: Store) -> None:
    home = household(store)
    store.add_member(home.family, home.bob)
    assert home.notes["group"] in received(home, "Bob")
    store.remove_member(home.family, home.bob)
    assert home.notes["group"] not in received(home, "Bob")


def test_notes_carry_their_scope_and_author(store: Store) -> None:
    home = household(store)
    scopes = {note.scope for note in store.get_notes(list(home.notes.values()))}
    assert scopes == {"personal", "group:family", "public"}
    group_note = store.get_note(home.notes["group"])
    assert group_note is not None and group_note.author_id == home.ann


def test_groups_and_public_owner_are_not_people(store: Store) -> None:
    home = household(store)
    assert [u.name for u in store.list_users()] == ["Ann", "Bob"]
    assert [g.name for g in store.list_groups()] == ["family"]
    assert store.user_by_name("group:family") is None
    assert store.public_owner_id() == store.public_owner_id()
    assert [u.name for u in store.members(home.family)] == ["Ann"]
    assert [g.name for g in store.groups_of(home.ann)] == ["family"]
    assert store.groups_of(home.bob) == []


def test_forget_me_erases_what_the_person_wrote_in_every_scope_and_drops_the_membership(store: Store) -> None:
    home = household(store)
    store.delete_user(home.ann)
    assert [store.get_note(note_id) for note_id in home.notes.values()] == [None, None, None]  # issue #34
    assert store.members(home.family) == [] and store.get_group(home.family) is not None


def test_deleting_a_group_deletes_its_notes_only(store: Store) -> None:
    home = household(store)
    store.delete_group(home.family)
    assert store.get_note(home.notes["group"]) is None
    assert store.get_note(home.notes["personal"]) is not None
    assert store.groups_of(home.ann) == []


def test_owner_for_each_scope(store: Store) -> None:
    home = household(store)
    assert owner_for(store, PERSONAL, home.ann) == home.ann
    assert owner_for(store, PUBLIC, home.bob) == store.public_owner_id()
    assert owner_for(store, Scope("group", "family"), home.ann) == home.family


# ---- bad input ---------------------------------------------------------------------------------------
def test_unknown_group_is_a_clear_error(store: Store) -> None:
    home = household(store)
    with pytest.raises(StoreError, match="no group named 'friends'"):
        owner_for(store, parse_scope("group:friends"), home.ann)


def test_non_member_cannot_write_into_a_group(store: Store) -> None:
    home = household(store)
    with pytest.raises(StoreError, match="Bob is not a member of group 'family'"):
        owner_for(store, parse_scope("group:family"), home.bob)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("persnal", "unknown scope 'persnal'"),
        ("private", "unknown scope 'private'"),
        ("", "unknown scope ''"),
        ("group", "needs the group's name"),
        ("group:", "needs the group's name"),
        ("public:all", "unknown scope 'public:all'"),
        ("groups:family", "unknown scope 'groups:family'"),
    ],
)
def test_scope_typos_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(DataError, match=message):
        parse_scope(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("personal", PERSONAL),
        (" Public ", PUBLIC),
        ("group:family", Scope("group", "family")),
        ("GROUP: ward 3", Scope("group", "ward 3")),
    ],
)
def test_scope_spellings(text: str, expected: Scope) -> None:
    assert parse_scope(text) == expected
    assert scope_kind(str(expected)) == expected.kind


def test_group_and_membership_errors(store: Store) -> None:
    home = household(store)
    with pytest.raises(StoreError, match="already exists"):
        store.add_group(" family ")
    with pytest.raises(StoreError, match="not a usable group name"):
        store.add_group("a:b")
    with pytest.raises(StoreError, match="not a member"):
        store.remove_member(home.family, home.bob)
    with pytest.raises(StoreError, match="no user with id"):
        store.add_member(home.family, home.family)  # a group is not a person
    with pytest.raises(StoreError, match="no group with id"):
        store.add_member(home.ann, home.bob)  # a person is not a group
    with pytest.raises(StoreError, match="looks like a scope name"):
        store.add_user("group:family")


def test_a_note_with_a_scope_field_cannot_change_its_owner(store: Store) -> None:
    """The scope is the owner's: setting Note.scope by hand does not move a note anywhere."""
    home = household(store)
    stored = store.add_note(Note(**{**make_note(home.ann, "x", seed=9).__dict__, "scope": "public"}))
    assert stored.scope == "personal" and stored.owner_id == home.ann
