"""Schema migrations of the memory database, applied forward in order, one transaction each.

`MIGRATIONS[i]` turns schema version i into version i + 1. Never edit a released migration; append one.
The notes table keeps each embedding as the source of truth; the vec0 table is the searchable index
built from it, so a later migration can rebuild the index (new dimension, new metric) without data loss.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import apsw

from kiosk.memory.lexical import INDEX_TOKENIZER, index_terms, indexed_text, stemmer
from kiosk.memory.note import EMBEDDING_DIM, from_epoch

Migration = Callable[[apsw.Connection], None]

VECTOR_CHUNK_SIZE = 128
"""vec0 stores vectors in fixed chunks per partition; the default 1,024 would cost every owner 1.5 MB
however few notes they have. 128 keeps that at 192 KB; KNN over 10k notes of one owner measured 31.5 ms
p50 with either chunk size here."""


def _v1_initial(conn: apsw.Connection) -> None:
    conn.execute(
        f"""
        CREATE TABLE users (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL
        );
        CREATE TABLE templates (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            modality TEXT NOT NULL,
            dimension INTEGER NOT NULL,
            vector BLOB NOT NULL,
            model_sha256 TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE INDEX templates_by_user ON templates(user_id, modality);
        CREATE TABLE notes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            owner_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            modality TEXT NOT NULL,
            content TEXT NOT NULL,
            timestamp REAL NOT NULL,
            keywords TEXT NOT NULL DEFAULT '[]',
            tags TEXT NOT NULL DEFAULT '[]',
            context TEXT NOT NULL DEFAULT '',
            embedding BLOB NOT NULL,
            source TEXT NOT NULL,
            source_ref TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX notes_by_owner_time ON notes(owner_id, timestamp, id);
        CREATE INDEX notes_by_source_ref ON notes(owner_id, source_ref);
        CREATE TABLE links (
            source_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            target_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (source_id, target_id)
        ) WITHOUT ROWID;
        CREATE INDEX links_by_target ON links(target_id);
        CREATE TABLE history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            at REAL NOT NULL,
            reason TEXT NOT NULL,
            before TEXT NOT NULL,
            after TEXT NOT NULL
        );
        CREATE INDEX history_by_note ON history(note_id);
        -- No foreign key: a deleted user's counter must keep rising so caches never see a stale version.
        CREATE TABLE owner_versions (
            owner_id INTEGER PRIMARY KEY,
            version INTEGER NOT NULL
        );
        CREATE VIRTUAL TABLE note_vectors USING vec0(
            note_id INTEGER PRIMARY KEY,
            owner_id INTEGER PARTITION KEY,
            embedding FLOAT[{EMBEDDING_DIM}] distance_metric=cosine,
            chunk_size={VECTOR_CHUNK_SIZE}
        );
        """
    )


def _v2_fts(conn: apsw.Connection) -> None:
    """Lexical index: a contentless FTS5 table (rowid = note id) searched with BM25 inside the gate's owners.

    Contentless, so it holds tokens only and encrypting `notes.content` never breaks it. Its terms are
    owner-prefixed stems (kiosk.memory.lexical), so a query only ever reads the gate's owners' postings,
    the equivalent of the vec0 partition key. Existing notes are back-filled in the same transaction.
    """
    conn.execute(
        f"CREATE VIRTUAL TABLE note_fts USING fts5(terms, content='', contentless_delete=1, "
        f"tokenize='{INDEX_TOKENIZER}')"
    )
    tokenize = stemmer(conn)
    rows: list[tuple[Any, ...]] = [
        tuple(row)
        for row in conn.execute("SELECT id, owner_id, content, timestamp, keywords, tags, context FROM notes")
    ]
    for note_id, owner_id, content, timestamp, keywords, tags, context in rows:
        body = indexed_text(
            str(content), json.loads(str(keywords)), json.loads(str(tags)), str(context), from_epoch(float(timestamp))
        )
        conn.execute(
            "INSERT INTO note_fts (rowid, terms) VALUES (?, ?)", (note_id, index_terms(tokenize, int(owner_id), body))
        )


def _v3_security(conn: apsw.Connection) -> None:
    """Tables for encryption at rest. The rows themselves are sealed by SqliteStore when it opens the file
    with a master key (it needs the key, which a migration does not have): see `seal_plaintext_rows`."""
    conn.execute(
        """
        -- Each user's data key, wrapped (AES-GCM) by the master key; deleting the user destroys it.
        CREATE TABLE user_keys (
            user_id INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
            generation INTEGER NOT NULL,
            wrapped BLOB NOT NULL,
            created_at REAL NOT NULL
        );
        -- A known value sealed by the master key: opening with the wrong key fails here, not on a note.
        CREATE TABLE key_check (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            fingerprint TEXT NOT NULL,
            sealed BLOB NOT NULL
        );
        """
    )


def _v4_sensitive(conn: apsw.Connection) -> None:
    """Note sensitivity (#13): NULL = not sensitive, else a category; existing notes stay unmarked."""
    conn.execute(
        """
        ALTER TABLE notes ADD COLUMN sensitivity TEXT;
        CREATE INDEX notes_sensitive_by_owner ON notes(owner_id) WHERE sensitivity IS NOT NULL;
        """
    )


def _v5_scopes(conn: apsw.Connection) -> None:
    """Scopes, groups, strength and archive.

    Groups and the public scope are pseudo-owners: rows of `users` with kind 'group' / 'public', so a group's
    or the public notes live in their own vec0 partition and every owner-restricted search keeps working.
    A note's strength is not stored: it follows from last_used_at (NULL: its timestamp) and reinforcements
    (kiosk/memory/forgetting.py). An archived note keeps its row but leaves the vector index.
    """
    conn.execute(
        """
        ALTER TABLE users ADD COLUMN kind TEXT NOT NULL DEFAULT 'person';
        CREATE TABLE group_members (
            group_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            added_at REAL NOT NULL,
            PRIMARY KEY (group_id, user_id)
        ) WITHOUT ROWID;
        CREATE INDEX group_members_by_user ON group_members(user_id);
        ALTER TABLE notes ADD COLUMN author_id INTEGER REFERENCES users(id) ON DELETE SET NULL;
        ALTER TABLE notes ADD COLUMN last_used_at REAL;
        ALTER TABLE notes ADD COLUMN reinforcements INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE notes ADD COLUMN archived_at REAL;
        """
    )


def _v6_unique_source_refs(conn: apsw.Connection) -> None:
    """A source reference names one note of its owner (#34): two imports of one file at once stored every turn
    twice. Of the rows an owner already holds under one reference the first stays; a later one with the same
    embedding (the same turn stored again) is deleted with its index entries, links and history; a later one
    with another embedding is a different note and stays, its reference suffixed with its id."""
    rows = [
        (int(note_id), int(first))
        for note_id, first in conn.execute(
            """
            SELECT n.id, f.id FROM notes n
            JOIN notes f ON f.id = (SELECT min(id) FROM notes WHERE owner_id = n.owner_id AND source_ref = n.source_ref)
            WHERE n.source_ref IS NOT NULL AND n.id <> f.id AND n.embedding = f.embedding
            """
        )
    ]
    doubled = json.dumps([note_id for note_id, _ in rows])
    for table in ("note_vectors", "note_fts"):
        key = "note_id" if table == "note_vectors" else "rowid"
        conn.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT value FROM json_each(?))", (doubled,))
    conn.execute("DELETE FROM notes WHERE id IN (SELECT value FROM json_each(?))", (doubled,))
    conn.execute(
        """
        UPDATE notes SET source_ref = source_ref || '#' || id
        WHERE source_ref IS NOT NULL
          AND id > (SELECT min(id) FROM notes f WHERE f.owner_id = notes.owner_id AND f.source_ref = notes.source_ref);
        DROP INDEX notes_by_source_ref;
        CREATE UNIQUE INDEX notes_by_source_ref ON notes(owner_id, source_ref);
        """
    )


# In the order the features landed on main (a database made in between stays valid).
MIGRATIONS: list[Migration] = [
    _v1_initial,
    _v2_fts,
    _v3_security,
    _v4_sensitive,
    _v5_scopes,
    _v6_unique_source_refs,
]
LATEST_VERSION = len(MIGRATIONS)
