"""The FTS5 lexical index on the real SQLite: kept with the notes, owner-restricted, migrated, injection-safe."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest
import sqlite_vec

from kiosk.errors import StoreError
from kiosk.memory import SqliteStore
from kiosk.memory.schema import MIGRATIONS

from .builders import make_note


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "memory.db")


def ids(found: list[tuple[int, float]]) -> list[int]:
    return [note_id for note_id, _ in found]


def test_lexical_finds_words_stems_attributes_and_dates_of_the_owner_only(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    lake = store.add_note(make_note(ann, "I went painting at the lake", seed=1, keywords=["watercolours"]))
    shop = store.add_note(make_note(ann, "Bought bread", seed=2, tags=["groceries"], context="Ann at the bakery"))
    other = store.add_note(make_note(bob, "Painting is my favourite hobby", seed=3))

    assert ids(store.lexical([ann], "Who paints?", 10)) == [lake.id]  # porter: paints ~ painting
    assert ids(store.lexical([bob], "Who paints?", 10)) == [other.id]
    assert set(ids(store.lexical([ann, bob], "painting", 10))) == {lake.id, other.id}
    assert ids(store.lexical([ann], "watercolours", 10)) == [lake.id]  # keywords are indexed
    assert ids(store.lexical([ann], "groceries bakery", 10)) == [shop.id]  # tags and context too
    # make_note dates every note 8 May 2023 (a Monday): the date forms people ask with all match.
    for phrase in ("8 May 2023", "May 2023", "2023-05-08", "Monday"):
        assert set(ids(store.lexical([ann], phrase, 10))) == {lake.id, shop.id}, phrase
    assert store.lexical([ann], "What did they do?", 10) == []  # only stopwords: nothing to match
    assert store.lexical([], "painting", 10) == []


def test_scores_are_bm25_higher_is_better_and_k_limits(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    twice = store.add_note(make_note(ann, "violin lessons, my violin teacher", seed=1))
    once = store.add_note(make_note(ann, "a violin", seed=2))
    for n in range(5):
        store.add_note(make_note(ann, f"unrelated note {n}", seed=10 + n))
    found = store.lexical([ann], "violin teacher", 10)
    assert ids(found) == [twice.id, once.id]
    assert found[0][1] > found[1][1] > 0
    assert ids(store.lexical([ann], "violin teacher", 1)) == [twice.id]
    with pytest.raises(StoreError, match="out of range"):
        store.lexical([ann], "violin", 0)


def test_owners_terms_are_separate_postings(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    store.add_note(make_note(ann, "lighthouse", seed=1))
    store.add_note(make_note(bob, "lighthouse", seed=2))
    store._conn.execute("CREATE VIRTUAL TABLE temp.note_fts_vocab USING fts5vocab(main, note_fts, 'row')")
    vocabulary = {row[0] for row in store._query("SELECT term FROM temp.note_fts_vocab")}
    assert {f"o{ann}xlighthous", f"o{bob}xlighthous"} <= vocabulary
    assert not any(term.startswith("lighthous") for term in vocabulary)


def test_fts_syntax_in_a_question_is_only_words(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    store.add_note(make_note(bob, "secret of bob", seed=1))
    mine = store.add_note(make_note(ann, "mine: a quoted word", seed=2))
    hostile = f'quoted" OR "o{bob}xsecret" OR terms : secret* NEAR( ) ^ -'
    assert ids(store.lexical([ann], hostile, 10)) == [mine.id]


def test_index_follows_update_delete_and_user_deletion(store: SqliteStore) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    note = store.add_note(make_note(ann, "kayak trip", seed=1))
    store.add_note(make_note(bob, "kayak race", seed=2))
    note.content = "hiking trip"
    store.update_note(note, "edit")
    assert store.lexical([ann], "kayak", 10) == []
    assert ids(store.lexical([ann], "hiking", 10)) == [note.id]
    assert note.id is not None
    store.delete_note(note.id)
    assert store.lexical([ann], "hiking trip", 10) == []
    store.delete_user(bob)
    assert store.lexical([bob], "kayak", 10) == []
    assert store._query("SELECT count(*) FROM note_fts")[0][0] == 0


def test_a_failed_write_leaves_no_index_entry(store: SqliteStore) -> None:
    with pytest.raises(StoreError, match="no user"):
        store.add_note(make_note(99, "orphan words", seed=1))
    assert store._query("SELECT count(*) FROM note_fts")[0][0] == 0


def test_index_is_contentless(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    note = store.add_note(make_note(ann, "a private sentence", seed=1))
    (row,) = store._query("SELECT terms FROM note_fts WHERE rowid = ?", (note.id,))
    assert row == (None,)  # tokens only: the text itself is not stored a second time


def test_migration_v2_back_fills_existing_notes(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    MIGRATIONS[0](conn)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1)")
    conn.execute("INSERT INTO users (name, created_at) VALUES ('Ann', 0), ('Bob', 0)")
    blob = make_note(1, seed=1).embedding.tobytes()  # type: ignore[union-attr]
    for owner, content, keywords in ((1, "sailing on Sunday", ["boat"]), (2, "sailing alone", [])):
        conn.execute(
            "INSERT INTO notes (owner_id, modality, content, timestamp, keywords, embedding, source, created_at, "
            "updated_at) VALUES (?, 'face', ?, 1683554160, ?, ?, 'chat', 0, 0)",
            (owner, content, json.dumps(keywords), blob),
        )
    conn.close()

    store = SqliteStore(path)
    assert store.schema_version() == len(MIGRATIONS)
    assert ids(store.lexical([1], "sailing boat", 10)) == [1]
    assert ids(store.lexical([2], "sailing", 10)) == [2]
    assert sorted(ids(store.lexical([1, 2], "May 2023", 10))) == [1, 2]
    assert list(tmp_path.glob("memory.db.v1-*.bak"))
    store.close()
