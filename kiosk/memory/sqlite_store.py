"""The memory store on SQLite + sqlite-vec (through apsw, which can load extensions).

Durability: WAL journal with synchronous=FULL, one transaction per write call, so a note whose
`add_note` returned survives a crash of the process (and of the machine). Readers on other
connections see the last committed state while a writer is busy (WAL). One connection per store;
calls on the same store from several threads are serialised by a lock.

Vector search runs inside sqlite-vec: a vec0 table partitioned by owner, queried once per allowed
owner with `owner_id = ?` (vec0 partition keys take equality constraints), and the per-owner
top-k lists merged. Notes of owners that were not asked for are never scanned.

At rest (with a master key): note texts, history and templates are sealed per user (row_sealing.py);
vectors stay in clear for search. Erasure zeroes what it deletes (secure_delete, vec0 slots), merges any
FTS5 index, gives pages back and empties the WAL, so deleted text is gone from every file of the database.

Lexical search (BM25) runs in a contentless FTS5 table kept in the same transaction as each note row; its
terms are owner-prefixed stems, so a query (one per allowed owner) names and reads that owner's terms only.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import sqlite_vec

from kiosk.errors import KioskError, StoreError
from kiosk.memory.lexical import index_terms, indexed_text, match_expression, query_terms, stemmer
from kiosk.memory.note import (
    EMBEDDING_DIM,
    Group,
    HistoryEntry,
    Link,
    Note,
    Template,
    User,
    from_epoch,
    to_epoch,
)
from kiosk.memory.row_sealing import (
    HISTORY_SEALED_FIELDS,
    NOTE_SEALED_FIELDS,
    RowSealer,
    history_aad,
    is_sealed_vector,
    note_aad,
    open_text,
    seal_text,
    template_aad,
)
from kiosk.memory.schema import LATEST_VERSION, MIGRATIONS
from kiosk.security.sealing import Cipher, MasterKey

log = logging.getLogger(__name__)

MAX_K = 4096
"""The largest k a vec0 KNN query accepts."""

BUSY_TIMEOUT_MS = 10_000
MMAP_BYTES = 1 << 30
"""Reads go through a memory map of up to 1 GiB instead of read() calls into SQLite's 2 MB page cache: one
owner's vec0 chunk alone is 1.5 MB (1,024 slots x 384 float32), so every KNN evicted the lexical index's pages
and copied the chunk again; mapped, a query reads it in place (bench/results/hybrid.md, 100k notes: the fused
default's KNN part 1.69 -> 1.30 ms p50). Writes still go through the WAL as before."""
_NOTE_COLUMNS = (
    "n.id, n.owner_id, n.modality, n.content, n.timestamp, n.keywords, n.tags, n.context, n.embedding, "
    "n.source, n.source_ref, n.created_at, n.updated_at, n.author_id, n.last_used_at, n.reinforcements, "
    "n.archived_at, u.kind, u.name, n.sensitivity"
)
_NOTES_WITH_OWNER = "notes n JOIN users u ON u.id = n.owner_id"
PERSON, GROUP, PUBLIC = "person", "group", "public"
_GROUP_PREFIX = "group:"
_PUBLIC_NAME = "scope:public"
_RESERVED_PREFIXES = (_GROUP_PREFIX, "scope:")
"""Groups and the public scope are rows of `users` under these names; people cannot take them."""
_TRACKED_FIELDS = ("content", "timestamp", "keywords", "tags", "context", "modality", "sensitivity")


def _as_vector(vector: np.ndarray, what: str, dimension: int | None = EMBEDDING_DIM) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or (dimension is not None and array.shape[0] != dimension):
        expected = f"({dimension},)" if dimension is not None else "a 1-d vector"
        raise StoreError(f"{what} has shape {array.shape}, expected {expected}", "pass one float32 vector")
    if not np.all(np.isfinite(array)):
        raise StoreError(f"{what} contains NaN or infinity", "check the encoder output")
    if not np.any(array):
        raise StoreError(f"{what} is all zeros", "a zero vector has no direction to compare")
    return array


def _blob_to_vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32).copy()


def _ids_json(ids: Sequence[int]) -> str:
    return json.dumps(sorted(set(int(i) for i in ids)))


def _group_name(name: str) -> str:
    clean = name.strip()
    if not clean or ":" in clean:
        raise StoreError(f"'{name}' is not a usable group name", "give a non-empty name without ':'")
    return clean


class SqliteStore:
    """`Store` on one SQLite file (or ':memory:')."""

    def __init__(
        self, path: Path | str, *, backup_dir: Path | None = None, master_key: MasterKey | None = None
    ) -> None:
        """`master_key` seals note contents and templates at rest (None: stored in clear, e.g. for evaluation
        stores); a database once opened with a key refuses to open without it."""
        self.path = Path(path) if str(path) != ":memory:" else None
        self._lock = threading.RLock()
        self._sealer = RowSealer(master_key) if master_key is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = apsw.Connection(str(path))
            self._conn.enable_load_extension(True)
            self._conn.load_extension(sqlite_vec.loadable_path())
            self._conn.enable_load_extension(False)
            self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            self._stem = stemmer(self._conn)
            self._conn.execute("PRAGMA foreign_keys = ON")
            # Deleted cells and freed pages are overwritten with zeros, so erased text leaves no trace.
            self._conn.execute("PRAGMA secure_delete = ON")
            if self._version() == 0:
                self._conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only takes effect before the first table
            if self.path is not None:
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            if self.path is not None:
                self._conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            self._migrate(backup_dir)
            self._open_sealing()
        except apsw.Error as exc:
            raise StoreError(
                f"memory database {path} cannot be opened ({exc})",
                "check the file is a kiosk memory DB and not locked or damaged; restore a backup if it is",
            ) from exc

    # ---- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def schema_version(self) -> int:
        return self._version()

    def integrity_check(self) -> str:
        """'ok' when SQLite finds the file consistent, else its first complaint."""
        with self._lock:
            rows = self._conn.execute("PRAGMA integrity_check").fetchall()
        return "; ".join(str(row[0]) for row in rows)

    def checkpoint(self) -> None:
        """Fold the WAL back into the main file (before measuring or copying the DB)."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _version(self) -> int:
        has_table = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if not has_table:
            return 0
        row = self._conn.execute("SELECT version FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self, backup_dir: Path | None) -> None:
        current = self._version()
        if current > LATEST_VERSION:
            raise StoreError(
                f"memory database {self.path} has schema version {current}, newer than this build ({LATEST_VERSION})",
                "run a newer kiosk build",
            )
        if current == LATEST_VERSION:
            return
        if current > 0 and self.path is not None:
            self._backup(backup_dir or self.path.parent, current)
        for version in range(current, LATEST_VERSION):
            with self._write():
                if self._version() != version:
                    continue  # another connection migrated this step while we waited for the lock
                MIGRATIONS[version](self._conn)
                self._conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                self._conn.execute("DELETE FROM schema_version")
                self._conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version + 1,))
            log.info("memory database migrated to schema version %d", version + 1)

    def _backup(self, directory: Path, version: int) -> Path:
        assert self.path is not None
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{self.path.name}.v{version}-{time.strftime('%Y%m%d-%H%M%S')}.bak"
        destination = apsw.Connection(str(target))
        try:
            with destination.backup("main", self._conn, "main") as backup:
                while not backup.done:
                    backup.step(-1)
        finally:
            destination.close()
        log.info("backed up memory database (schema %d) to %s before migrating", version, target)
        return target

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One IMMEDIATE transaction (takes the write lock up front, so no upgrade deadlocks)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                if self._sealer is not None:
                    self._sealer.forget_cached_keys()
                raise
            self._conn.execute("COMMIT")

    # ---- sealing at rest -----------------------------------------------------------------------
    @property
    def encrypted(self) -> bool:
        return self._sealer is not None

    def _open_sealing(self) -> None:
        has_table = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'key_check'"
        ).fetchone()
        has_check = has_table is not None and self._conn.execute("SELECT 1 FROM key_check").fetchone() is not None
        if self._sealer is None:
            if has_check:
                raise StoreError(
                    f"memory database {self.path or ':memory:'} is encrypted",
                    "open it through the kiosk (which loads the master key), not as a plain store",
                )
            return
        # One transaction: a database holding the key check never holds a row in clear (nothing can add one
        # without the key), so later opens skip the scan for clear rows.
        with self._write():
            first_keyed_open = self._sealer.check_master(self._conn, self.path or ":memory:")
            sealed = self._seal_all_in_place() if first_keyed_open else 0
        if sealed:
            log.info("sealed %d memory rows that were stored in clear", sealed)
            self._reclaim(full=True)

    def _cipher(self, owner_id: int, *, create: bool = False) -> Cipher | None:
        if self._sealer is None:
            return None
        return self._sealer.cipher(self._conn, owner_id, create=create)

    def _opener(self, owner_id: int) -> Callable[[], Cipher] | None:
        """Opens the owner's data key only when a sealed value is met (clear values need no key)."""
        if self._sealer is None:
            return None
        sealer = self._sealer
        return lambda: sealer.cipher(self._conn, owner_id)

    def _next_id(self, table: str) -> int:
        """The id AUTOINCREMENT will give the next row; sealing binds the ciphertext to it before the insert."""
        row = self._conn.execute(
            f"SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
            f"coalesce((SELECT max(id) FROM {table}), 0)) + 1",
            (table,),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def seal_plaintext_rows(self) -> int:
        """Encrypt in place every value still stored in clear; returns how many rows were sealed. Opening a clear
        database with a key already does this once; sealed rows are left alone."""
        if self._sealer is None:
            return 0
        with self._write():
            sealed = self._seal_all_in_place()
        if sealed:
            log.info("sealed %d memory rows that were stored in clear", sealed)
            self._reclaim(full=True)
        return sealed

    def _seal_all_in_place(self) -> int:
        return self._seal_notes_in_place() + self._seal_history_in_place() + self._seal_templates_in_place()

    def _seal_notes_in_place(self) -> int:
        rows = [
            tuple(r)
            for r in self._conn.execute(
                "SELECT id, owner_id, content, keywords, tags, context FROM notes WHERE typeof(content) = 'text' "
                "OR typeof(keywords) = 'text' OR typeof(tags) = 'text' OR typeof(context) = 'text'"
            )
        ]
        for note_id, owner_id, *values in rows:
            cipher = self._cipher(int(owner_id), create=True)
            sealed = [
                seal_text(cipher, value, note_aad(note_id, owner_id, name)) if isinstance(value, str) else value
                for name, value in zip(NOTE_SEALED_FIELDS, values, strict=True)
            ]
            self._conn.execute(
                "UPDATE notes SET content = ?, keywords = ?, tags = ?, context = ? WHERE id = ?", (*sealed, note_id)
            )
        return len(rows)

    def _seal_history_in_place(self) -> int:
        rows = [
            tuple(r)
            for r in self._conn.execute(
                "SELECT history.id, history.note_id, notes.owner_id, history.before, history.after "
                "FROM history JOIN notes ON notes.id = history.note_id "
                "WHERE typeof(history.before) = 'text' OR typeof(history.after) = 'text'"
            )
        ]
        for entry_id, note_id, owner_id, *values in rows:
            cipher = self._cipher(int(owner_id), create=True)
            sealed = [
                seal_text(cipher, value, history_aad(entry_id, note_id, owner_id, name))
                if isinstance(value, str)
                else value
                for name, value in zip(HISTORY_SEALED_FIELDS, values, strict=True)
            ]
            self._conn.execute("UPDATE history SET before = ?, after = ? WHERE id = ?", (*sealed, entry_id))
        return len(rows)

    def _seal_templates_in_place(self) -> int:
        rows = [
            tuple(r)
            for r in self._conn.execute(
                "SELECT id, user_id, modality, vector FROM templates WHERE length(vector) = dimension * 4"
            )
        ]
        for template_id, user_id, modality, vector in rows:
            cipher = self._cipher(int(user_id), create=True)
            assert cipher is not None
            blob = cipher.seal(bytes(vector), template_aad(template_id, user_id, modality))
            self._conn.execute("UPDATE templates SET vector = ? WHERE id = ?", (blob, template_id))
        return len(rows)

    def rekey_user(self, user_id: int) -> int:
        """A new data key for the user; every sealed row of theirs is re-sealed with it (renewability).

        Returns the new key generation (0 when the store is not encrypted). Nothing is lost: each value is
        opened with the old key and sealed with the new one in one transaction.
        """
        with self._write():
            generation = self._rekey(user_id)
            self._bump(user_id)
        self._reclaim(full=False)
        return generation

    def _rekey(self, user_id: int) -> int:
        if self._sealer is None:
            return 0
        notes = [
            tuple(r)
            for r in self._conn.execute(
                "SELECT id, content, keywords, tags, context FROM notes WHERE owner_id = ?", (user_id,)
            )
        ]
        history = [
            tuple(r)
            for r in self._conn.execute(
                "SELECT history.id, history.note_id, history.before, history.after FROM history "
                "JOIN notes ON notes.id = history.note_id WHERE notes.owner_id = ?",
                (user_id,),
            )
        ]
        templates = [
            tuple(r)
            for r in self._conn.execute(
                "SELECT id, modality, vector, dimension FROM templates WHERE user_id = ?", (user_id,)
            )
        ]
        opener = self._opener(user_id)
        notes_clear = [
            (
                row[0],
                [
                    open_text(opener, v, note_aad(row[0], user_id, n))
                    for n, v in zip(NOTE_SEALED_FIELDS, row[1:], strict=True)
                ],
            )
            for row in notes
        ]
        history_clear = [
            (
                row[0],
                row[1],
                [
                    open_text(opener, v, history_aad(row[0], row[1], user_id, n))
                    for n, v in zip(HISTORY_SEALED_FIELDS, row[2:], strict=True)
                ],
            )
            for row in history
        ]
        templates_clear = [
            (row[0], row[1], self._template_vector(user_id, row[0], row[1], bytes(row[2]), int(row[3])))
            for row in templates
        ]
        cipher = self._sealer.rotate(self._conn, user_id)
        for note_id, values in notes_clear:
            sealed = [
                seal_text(cipher, v, note_aad(note_id, user_id, n))
                for n, v in zip(NOTE_SEALED_FIELDS, values, strict=True)
            ]
            self._conn.execute(
                "UPDATE notes SET content = ?, keywords = ?, tags = ?, context = ? WHERE id = ?", (*sealed, note_id)
            )
        for entry_id, note_id, values in history_clear:
            sealed = [
                seal_text(cipher, v, history_aad(entry_id, note_id, user_id, n))
                for n, v in zip(HISTORY_SEALED_FIELDS, values, strict=True)
            ]
            self._conn.execute("UPDATE history SET before = ?, after = ? WHERE id = ?", (*sealed, entry_id))
        for template_id, modality, vector in templates_clear:
            self._conn.execute(
                "UPDATE templates SET vector = ? WHERE id = ?",
                (cipher.seal(vector, template_aad(template_id, user_id, modality)), template_id),
            )
        return self._sealer.generation(self._conn, user_id)

    def key_generation(self, user_id: int) -> int:
        """The user's data-key generation (rises with every re-key; 0 when not encrypted)."""
        if self._sealer is None:
            return 0
        with self._lock:
            return self._sealer.generation(self._conn, user_id)

    def rotate_master_key(self, new_master: MasterKey) -> int:
        """Re-wrap every user's data key under a new master key; returns how many keys were re-wrapped."""
        if self._sealer is None:
            raise StoreError("this memory database is not encrypted", "open it with its master key first")
        with self._write():
            count = self._sealer.rewrap_all(self._conn, new_master)
        self._reclaim(full=False)
        return count

    # ---- erasure -------------------------------------------------------------------------------
    def _fts_tables(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'"
        ).fetchall()
        return [str(row[0]) for row in rows]

    def _forget_lexical(self, note_ids: Sequence[int]) -> None:
        """Remove the notes from any FTS5 index (keyed by note id); harmless when already removed."""
        if not note_ids:
            return
        wanted = json.dumps([int(i) for i in note_ids])
        for table in self._fts_tables():
            self._conn.execute(f'DELETE FROM "{table}" WHERE rowid IN (SELECT value FROM json_each(?))', (wanted,))

    def _zero_vectors(self, note_ids: Sequence[int]) -> None:
        """vec0 only flags a deleted vector as invalid; overwrite its slot first so the floats are gone too."""
        zero = np.zeros(EMBEDDING_DIM, dtype=np.float32).tobytes()
        for note_id in note_ids:
            self._conn.execute("UPDATE note_vectors SET embedding = ? WHERE note_id = ?", (zero, int(note_id)))

    def _reclaim(self, *, full: bool) -> None:
        """After an erasure: merge FTS5 segments (drops deleted tokens), give free pages back, empty the WAL."""
        with self._lock:
            for table in self._fts_tables():
                self._conn.execute(f'INSERT INTO "{table}"("{table}") VALUES (\'optimize\')')
            if full:
                self._conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect with this VACUUM
                self._conn.execute("VACUUM")
            else:
                self._conn.execute("PRAGMA incremental_vacuum")
            if self.path is not None:
                busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy is not None and int(busy[0]) != 0:
                    log.warning("another connection is reading: the WAL keeps old pages until it closes")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return [tuple(row) for row in self._conn.execute(sql, params)]
            except apsw.BusyError as exc:
                raise StoreError("memory database is busy", "another process holds it; retry") from exc

    def _bump(self, owner_id: int) -> None:
        self._conn.execute(
            "INSERT INTO owner_versions (owner_id, version) VALUES (?, 1) "
            "ON CONFLICT(owner_id) DO UPDATE SET version = version + 1",
            (owner_id,),
        )

    # ---- users ---------------------------------------------------------------------------------
    def add_user(self, name: str) -> User:
        name = name.strip()
        if not name:
            raise StoreError("a user needs a non-empty name", "give a name")
        if name.casefold().startswith(_RESERVED_PREFIXES):
            raise StoreError(f"'{name}' looks like a scope name", "people's names cannot start with group: or scope:")
        if self.user_by_name(name) is not None:
            raise StoreError(f"user '{name}' already exists", "pick another name or delete that user first")
        now = time.time()
        with self._write():
            self._conn.execute("INSERT INTO users (name, created_at) VALUES (?, ?)", (name, now))
            user_id = int(self._conn.last_insert_rowid())
            self._cipher(user_id, create=True)
            self._bump(user_id)
        return User(user_id, name, from_epoch(now))

    def get_user(self, user_id: int) -> User | None:
        rows = self._query("SELECT id, name, created_at FROM users WHERE id = ? AND kind = 'person'", (user_id,))
        return User(int(rows[0][0]), rows[0][1], from_epoch(rows[0][2])) if rows else None

    def user_by_name(self, name: str) -> User | None:
        rows = self._query("SELECT id, name, created_at FROM users WHERE name = ? AND kind = 'person'", (name.strip(),))
        return User(int(rows[0][0]), rows[0][1], from_epoch(rows[0][2])) if rows else None

    def list_users(self) -> list[User]:
        rows = self._query("SELECT id, name, created_at FROM users WHERE kind = 'person' ORDER BY id")
        return [User(int(r[0]), r[1], from_epoch(r[2])) for r in rows]

    def delete_user(self, user_id: int) -> None:
        """Forget a user: every note, vector, lexical entry, link, history entry, template, membership and their
        data key, then VACUUM and an emptied WAL, so none of it stays readable in the file.

        Group and public notes they said stay (they belong to the group / the terminal), without an author.
        """
        self._erase_owner(user_id, PERSON)

    def _erase_owner(self, owner_id: int, kind: str) -> None:
        with self._write():
            note_ids = [int(r[0]) for r in self._conn.execute("SELECT id FROM notes WHERE owner_id = ?", (owner_id,))]
            self._zero_vectors(note_ids)
            self._conn.execute(
                "DELETE FROM note_vectors WHERE note_id IN (SELECT id FROM notes WHERE owner_id = ?)",
                (owner_id,),
            )
            self._forget_lexical(note_ids)
            self._conn.execute("DELETE FROM users WHERE id = ? AND kind = ?", (owner_id, kind))
            self._bump(owner_id)
        if self._sealer is not None:
            self._sealer.forget_cached_keys()
        self._reclaim(full=True)

    # ---- groups and the public scope -----------------------------------------------------------------
    def add_group(self, name: str) -> Group:
        clean = _group_name(name)
        if self.group_by_name(clean) is not None:
            raise StoreError(f"group '{clean}' already exists", "pick another name")
        now = time.time()
        with self._write():
            self._conn.execute(
                "INSERT INTO users (name, created_at, kind) VALUES (?, ?, ?)", (_GROUP_PREFIX + clean, now, GROUP)
            )
            group_id = int(self._conn.last_insert_rowid())
            self._cipher(group_id, create=True)
            self._bump(group_id)
        return Group(group_id, clean, from_epoch(now))

    def group_by_name(self, name: str) -> Group | None:
        rows = self._query(
            "SELECT id, name, created_at FROM users WHERE name = ? AND kind = 'group'", (_GROUP_PREFIX + name.strip(),)
        )
        return self._group(rows[0]) if rows else None

    def get_group(self, group_id: int) -> Group | None:
        rows = self._query("SELECT id, name, created_at FROM users WHERE id = ? AND kind = 'group'", (group_id,))
        return self._group(rows[0]) if rows else None

    def list_groups(self) -> list[Group]:
        rows = self._query("SELECT id, name, created_at FROM users WHERE kind = 'group' ORDER BY name")
        return [self._group(row) for row in rows]

    def delete_group(self, group_id: int) -> None:
        """Delete a group with its memberships and every note of the group (an admin's decision), erased as
        a user's notes are."""
        if self.get_group(group_id) is None:
            raise StoreError(f"no group with id {group_id}", "see `kiosk groups list`")
        self._erase_owner(group_id, GROUP)

    def add_member(self, group_id: int, user_id: int) -> None:
        if self.get_group(group_id) is None:
            raise StoreError(f"no group with id {group_id}", "see `kiosk groups list`")
        if self.get_user(user_id) is None:
            raise StoreError(f"no user with id {user_id}", "enroll the person first")
        with self._write():
            self._conn.execute(
                "INSERT OR IGNORE INTO group_members (group_id, user_id, added_at) VALUES (?, ?, ?)",
                (group_id, user_id, time.time()),
            )
            self._bump(user_id)

    def remove_member(self, group_id: int, user_id: int) -> None:
        with self._write():
            self._conn.execute("DELETE FROM group_members WHERE group_id = ? AND user_id = ?", (group_id, user_id))
            if self._conn.changes() == 0:
                raise StoreError(f"user {user_id} is not a member of group {group_id}", "see `kiosk groups list`")
            self._bump(user_id)

    def members(self, group_id: int) -> list[User]:
        rows = self._query(
            "SELECT u.id, u.name, u.created_at FROM group_members m JOIN users u ON u.id = m.user_id "
            "WHERE m.group_id = ? ORDER BY u.id",
            (group_id,),
        )
        return [User(int(r[0]), r[1], from_epoch(r[2])) for r in rows]

    def groups_of(self, user_id: int) -> list[Group]:
        rows = self._query(
            "SELECT g.id, g.name, g.created_at FROM group_members m JOIN users g ON g.id = m.group_id "
            "WHERE m.user_id = ? ORDER BY g.name",
            (user_id,),
        )
        return [self._group(row) for row in rows]

    def existing_public_owner_id(self) -> int | None:
        """The pseudo-owner of public notes if one was ever made (never creates it: a read-only look)."""
        rows = self._query("SELECT id FROM users WHERE kind = 'public'")
        return int(rows[0][0]) if rows else None

    def public_owner_id(self) -> int:
        """The pseudo-owner of public notes (created on first use)."""
        existing = self.existing_public_owner_id()
        if existing is not None:
            return existing
        with self._write():
            row = self._conn.execute("SELECT id FROM users WHERE kind = 'public'").fetchone()
            if row is not None:
                return int(row[0])
            self._conn.execute(
                "INSERT INTO users (name, created_at, kind) VALUES (?, ?, ?)", (_PUBLIC_NAME, time.time(), PUBLIC)
            )
            owner_id = int(self._conn.last_insert_rowid())
            self._cipher(owner_id, create=True)
            self._bump(owner_id)
        return owner_id

    @staticmethod
    def _group(row: tuple[Any, ...]) -> Group:
        return Group(int(row[0]), str(row[1])[len(_GROUP_PREFIX) :], from_epoch(row[2]))

    # ---- templates -----------------------------------------------------------------------------
    def set_templates(self, user_id: int, modality: str, vectors: np.ndarray, model_sha256: str) -> list[Template]:
        """Replace the user's templates of `modality`; notes and their ownership stay as they are."""
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim == 1:
            matrix = matrix[None, :]
        if matrix.ndim != 2 or matrix.shape[0] == 0:
            raise StoreError(
                f"templates have shape {matrix.shape}, expected (n, d) with n >= 1", "pass an (n, d) array"
            )
        rows = [_as_vector(row, f"{modality} template", dimension=None) for row in matrix]
        if self.get_user(user_id) is None:
            raise StoreError(f"no user with id {user_id}", "enroll the user first")
        now = time.time()
        created: list[Template] = []
        with self._write():
            replaced = self._conn.execute(
                "SELECT 1 FROM templates WHERE user_id = ? AND modality = ? LIMIT 1", (user_id, modality)
            ).fetchone()
            self._conn.execute("DELETE FROM templates WHERE user_id = ? AND modality = ?", (user_id, modality))
            if replaced is not None:
                self._rekey(user_id)  # re-enrollment: the old templates' key no longer opens anything
            cipher = self._cipher(user_id, create=True)
            for row in rows:
                template_id = self._next_id("templates")
                blob = row.tobytes()
                if cipher is not None:
                    blob = cipher.seal(blob, template_aad(template_id, user_id, modality))
                self._conn.execute(
                    "INSERT INTO templates (id, user_id, modality, dimension, vector, model_sha256, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (template_id, user_id, modality, int(row.shape[0]), blob, model_sha256, now),
                )
                created.append(
                    Template(
                        int(self._conn.last_insert_rowid()),
                        user_id,
                        modality,
                        row,
                        model_sha256,
                        from_epoch(now),
                    )
                )
            self._bump(user_id)
        if replaced is not None:
            self._reclaim(full=False)
        return created

    def revoke_templates(self, user_id: int, modality: str | None = None) -> int:
        """Revoke (delete) the user's templates of `modality` (all when None); their notes stay, unreachable by
        the gate until the person is enrolled again. Returns how many templates were revoked."""
        with self._write():
            sql, params = "DELETE FROM templates WHERE user_id = ?", [user_id]
            if modality is not None:
                sql, params = sql + " AND modality = ?", [user_id, modality]  # type: ignore[list-item]
            self._conn.execute(sql, params)
            revoked = int(self._conn.changes())
            self._bump(user_id)
        self._reclaim(full=False)
        return revoked

    def templates(self, modality: str | None = None) -> list[Template]:
        sql = "SELECT id, user_id, modality, vector, model_sha256, created_at, dimension FROM templates"
        params: tuple[Any, ...] = ()
        if modality is not None:
            sql += " WHERE modality = ?"
            params = (modality,)
        with self._lock:
            rows = self._query(sql + " ORDER BY user_id, id", params)
            return [
                Template(
                    int(r[0]),
                    int(r[1]),
                    r[2],
                    _blob_to_vector(self._template_vector(int(r[1]), int(r[0]), r[2], bytes(r[3]), int(r[6]))),
                    r[4],
                    from_epoch(r[5]),
                )
                for r in rows
            ]

    def _template_vector(self, user_id: int, template_id: int, modality: str, blob: bytes, dimension: int) -> bytes:
        if not is_sealed_vector(blob, dimension):
            return blob
        cipher = self._cipher(user_id)
        if cipher is None:
            raise StoreError("this memory database is encrypted", "open it with its master key")
        return cipher.open(blob, template_aad(template_id, user_id, modality))

    # ---- notes ---------------------------------------------------------------------------------
    def add_note(self, note: Note) -> Note:
        """Store a new note with its vector and links in one transaction; returns it with id and times."""
        if note.id is not None:
            raise StoreError(f"note already has id {note.id}", "use update_note for stored notes")
        if not note.content.strip():
            raise StoreError("a note needs non-empty content", "give some text")
        if note.embedding is None:
            raise StoreError("a note needs its embedding before it is stored", "build notes with kiosk.memory.build")
        embedding = _as_vector(note.embedding, "note embedding")
        sensitivity = _checked_sensitivity(note.sensitivity)
        timestamp = to_epoch(note.timestamp)
        now = time.time()
        with self._write():
            if not self._conn.execute("SELECT 1 FROM users WHERE id = ?", (note.owner_id,)).fetchone():
                raise StoreError(f"no user with id {note.owner_id}", "add the user before their notes")
            note_id = self._next_id("notes")
            content, keywords, tags, context = self._seal_note_fields(note_id, note)
            self._conn.execute(
                "INSERT INTO notes (id, owner_id, modality, content, timestamp, keywords, tags, context, "
                "embedding, source, source_ref, created_at, updated_at, sensitivity, author_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    note_id,
                    note.owner_id,
                    note.modality,
                    content,
                    timestamp,
                    keywords,
                    tags,
                    context,
                    embedding.tobytes(),
                    note.source,
                    note.source_ref,
                    now,
                    now,
                    sensitivity,
                    note.author_id,
                ),
            )
            self._conn.execute(
                "INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (?, ?, ?)",
                (note_id, note.owner_id, embedding.tobytes()),
            )
            self._index(note_id, note)
            for link in note.links:
                self._insert_link(note_id, link.target_id, link.kind, now)
            self._bump(note.owner_id)
        stored = self.get_note(note_id)
        assert stored is not None
        return stored

    def _seal_note_fields(self, note_id: int, note: Note) -> list[str | bytes]:
        cipher = self._cipher(note.owner_id, create=True)
        values = (note.content, json.dumps(note.keywords), json.dumps(note.tags), note.context)
        return [
            seal_text(cipher, value, note_aad(note_id, note.owner_id, name))
            for name, value in zip(NOTE_SEALED_FIELDS, values, strict=True)
        ]

    def get_note(self, note_id: int) -> Note | None:
        notes = self.get_notes([note_id])
        return notes[0] if notes else None

    def get_notes(self, ids: Sequence[int]) -> list[Note]:
        """Notes with these ids, in the order asked; missing ids are skipped."""
        if not ids:
            return []
        wanted = json.dumps([int(i) for i in ids])
        with self._lock:
            rows = self._query(
                f"SELECT {_NOTE_COLUMNS} FROM {_NOTES_WITH_OWNER} WHERE n.id IN (SELECT value FROM json_each(?))",
                (wanted,),
            )
            by_id = {int(row[0]): row for row in rows}
            links = self._links_of(list(by_id))
            return [self._note(by_id[i], links.get(i, [])) for i in ids if i in by_id]

    def list_notes(self, owner_id: int, limit: int | None = None, offset: int = 0) -> list[Note]:
        """The owner's notes in chronological order (timestamp, then id), archived ones included."""
        with self._lock:
            rows = self._query(
                f"SELECT {_NOTE_COLUMNS} FROM {_NOTES_WITH_OWNER} WHERE n.owner_id = ? "
                "ORDER BY n.timestamp, n.id LIMIT ? OFFSET ?",
                (owner_id, -1 if limit is None else int(limit), int(offset)),
            )
            links = self._links_of([int(r[0]) for r in rows])
            return [self._note(row, links.get(int(row[0]), [])) for row in rows]

    def count_notes(self, owner_id: int | None = None) -> int:
        if owner_id is None:
            return int(self._query("SELECT count(*) FROM notes")[0][0])
        return int(self._query("SELECT count(*) FROM notes WHERE owner_id = ?", (owner_id,))[0][0])

    def source_refs(self, owner_id: int) -> set[str]:
        """Source references already stored for the owner (resumable imports skip these)."""
        rows = self._query("SELECT source_ref FROM notes WHERE owner_id = ? AND source_ref IS NOT NULL", (owner_id,))
        return {r[0] for r in rows}

    def update_note(self, note: Note, reason: str) -> Note:
        """Rewrite a stored note's fields (and vector if given); the change is recorded in its history."""
        if note.id is None:
            raise StoreError("cannot update a note that was never stored", "add_note it first")
        if not note.content.strip():
            raise StoreError("a note needs non-empty content", "give some text")
        embedding = _as_vector(note.embedding, "note embedding") if note.embedding is not None else None
        sensitivity = _checked_sensitivity(note.sensitivity)
        now = time.time()
        with self._write():
            rows = self._conn.execute(
                f"SELECT {_NOTE_COLUMNS} FROM {_NOTES_WITH_OWNER} WHERE n.id = ?", (note.id,)
            ).fetchall()
            if not rows:
                raise StoreError(f"no note with id {note.id}", "it may have been deleted")
            old = self._note(tuple(rows[0]), [])
            if old.owner_id != note.owner_id:
                raise StoreError(f"note {note.id} belongs to user {old.owner_id}", "notes never change owner")
            before, after = _changes(old, note)
            if embedding is not None and old.embedding is not None and np.array_equal(embedding, old.embedding):
                embedding = None
            content, keywords, tags, context = self._seal_note_fields(note.id, note)
            self._conn.execute(
                "UPDATE notes SET modality = ?, content = ?, timestamp = ?, keywords = ?, tags = ?, "
                "context = ?, embedding = coalesce(?, embedding), updated_at = ?, sensitivity = ? WHERE id = ?",
                (
                    note.modality,
                    content,
                    to_epoch(note.timestamp),
                    keywords,
                    tags,
                    context,
                    embedding.tobytes() if embedding is not None else None,
                    now,
                    sensitivity,
                    note.id,
                ),
            )
            if embedding is not None:
                self._conn.execute("DELETE FROM note_vectors WHERE note_id = ?", (note.id,))
                if not old.archived:  # an archived note stays out of the index until it is restored
                    self._conn.execute(
                        "INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (?, ?, ?)",
                        (note.id, note.owner_id, embedding.tobytes()),
                    )
                before["embedding"], after["embedding"] = "previous", "re-encoded"
            self._forget_lexical([note.id])
            if not old.archived:  # nor the lexical index
                self._index(note.id, note)
            entry_id = self._next_id("history")
            cipher = self._cipher(note.owner_id, create=True)
            self._conn.execute(
                "INSERT INTO history (id, note_id, at, reason, before, after) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    entry_id,
                    note.id,
                    now,
                    reason,
                    seal_text(cipher, json.dumps(before), history_aad(entry_id, note.id, note.owner_id, "before")),
                    seal_text(cipher, json.dumps(after), history_aad(entry_id, note.id, note.owner_id, "after")),
                ),
            )
            self._bump(note.owner_id)
        stored = self.get_note(note.id)
        assert stored is not None
        return stored

    def delete_note(self, note_id: int) -> None:
        """Delete the note, its vector, its lexical entry, its history and every link from or to it; the freed
        space is zeroed (secure_delete) and the WAL emptied, so its text is gone from the files."""
        with self._write():
            row = self._conn.execute("SELECT owner_id FROM notes WHERE id = ?", (note_id,)).fetchone()
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            self._zero_vectors([note_id])
            self._conn.execute("DELETE FROM note_vectors WHERE note_id = ?", (note_id,))
            self._forget_lexical([note_id])
            self._conn.execute("DELETE FROM notes WHERE id = ?", (note_id,))
            self._bump(int(row[0]))
        self._reclaim(full=False)

    # ---- strength and archive ------------------------------------------------------------------------
    def retention_state(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Active (not archived) notes of these owners: (ids, last use epoch s, reinforcements), by id.

        A note never used counts from its timestamp (when it was said), not from when it was imported.
        """
        rows = self._query(
            "SELECT id, coalesce(last_used_at, timestamp), reinforcements FROM notes "
            "WHERE owner_id IN (SELECT value FROM json_each(?)) AND archived_at IS NULL ORDER BY id",
            (_ids_json(owner_ids),),
        )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        used = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        counts = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        return ids, used, counts

    def reinforce(self, note_ids: Sequence[int], at: datetime) -> None:
        """These notes were retrieved and used at `at`: one more reinforcement each, age restarts.

        Not a change of the memory itself: no history entry, and owner versions (caches) stay.
        """
        if not note_ids:
            return
        with self._write():
            self._conn.execute(
                "UPDATE notes SET last_used_at = max(coalesce(last_used_at, timestamp), ?), "
                "reinforcements = reinforcements + 1 "
                "WHERE id IN (SELECT value FROM json_each(?)) AND archived_at IS NULL",
                (to_epoch(at), _ids_json(note_ids)),
            )

    def archive_notes(self, note_ids: Sequence[int], at: datetime) -> int:
        """Take these notes out of retrieval (their vectors and lexical entries leave the indexes); rows, links,
        history stay."""
        wanted = _ids_json(note_ids)
        with self._write():
            active: list[tuple[int, int]] = [
                (int(row[0]), int(row[1]))
                for row in self._conn.execute(
                    "SELECT id, owner_id FROM notes "
                    "WHERE id IN (SELECT value FROM json_each(?)) AND archived_at IS NULL",
                    (wanted,),
                )
            ]
            owners = sorted({owner for _, owner in active})
            self._forget_lexical([note_id for note_id, _ in active])
            self._conn.execute(
                "DELETE FROM note_vectors WHERE note_id IN "
                "(SELECT id FROM notes WHERE id IN (SELECT value FROM json_each(?)) AND archived_at IS NULL)",
                (wanted,),
            )
            self._conn.execute(
                "UPDATE notes SET archived_at = ? WHERE id IN (SELECT value FROM json_each(?)) AND archived_at IS NULL",
                (to_epoch(at), wanted),
            )
            archived = int(self._conn.changes())
            for owner in owners:
                self._bump(owner)
        return archived

    def restore_note(self, note_id: int, at: datetime) -> Note:
        """Bring an archived note back into retrieval; restoring is a use, so its age restarts at `at`."""
        with self._write():
            row = self._conn.execute(
                "SELECT owner_id, embedding, archived_at FROM notes WHERE id = ?", (note_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            owner_id, blob, archived_at = int(row[0]), row[1], row[2]
            if archived_at is None:
                raise StoreError(f"note {note_id} is not archived", "only archived notes can be restored")
            self._conn.execute(
                "UPDATE notes SET archived_at = NULL, last_used_at = ? WHERE id = ?", (to_epoch(at), note_id)
            )
            self._conn.execute(
                "INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (?, ?, ?)", (note_id, owner_id, blob)
            )
            restored = self.get_note(note_id)
            assert restored is not None
            self._index(note_id, restored)
            self._bump(owner_id)
        return restored

    # ---- vectors -------------------------------------------------------------------------------
    def knn(self, owner_ids: Sequence[int], query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (note id, cosine similarity) among the given owners' notes only, best first."""
        vector = _as_vector(query, "query embedding")
        if k < 1 or k > MAX_K:
            raise StoreError(f"k={k} is out of range", f"use 1..{MAX_K}")
        blob = vector.tobytes()
        found: list[tuple[int, float]] = []
        for owner in sorted(set(int(o) for o in owner_ids)):
            rows = self._query(
                "SELECT note_id, distance FROM note_vectors WHERE embedding MATCH ? AND k = ? AND owner_id = ?",
                (blob, k, owner),
            )
            found.extend((int(note_id), 1.0 - float(distance)) for note_id, distance in rows)
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:k]

    def lexical(self, owner_ids: Sequence[int], query_text: str, k: int) -> list[tuple[int, float]]:
        """Top-k (note id, BM25 score; higher is better) among the given owners' notes only, best first.

        The question's content words are ORed; a question with none (only stopwords) finds nothing.
        """
        if k < 1:
            raise StoreError(f"k={k} is out of range", "use k >= 1")
        terms = query_terms(self._stem, query_text)
        if not terms:
            return []
        found: list[tuple[int, float]] = []
        for owner in sorted(set(int(o) for o in owner_ids)):
            rows = self._query(
                "SELECT rowid, bm25(note_fts) AS score FROM note_fts WHERE note_fts MATCH ? ORDER BY score LIMIT ?",
                (match_expression(owner, terms), k),
            )
            found.extend((int(note_id), -float(score)) for note_id, score in rows)
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:k]

    def owner_matrix(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(note ids int64, timestamps float64 epoch s, embeddings (n, 384) float32) of active notes, chronological."""
        wanted = json.dumps(sorted(set(int(o) for o in owner_ids)))
        rows = self._query(
            "SELECT id, timestamp, embedding FROM notes WHERE owner_id IN (SELECT value FROM json_each(?)) "
            "AND archived_at IS NULL ORDER BY timestamp, id",
            (wanted,),
        )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        stamps = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), EMBEDDING_DIM)
        return ids, stamps, matrix.copy()

    def sensitive_note_ids(self, owner_ids: Sequence[int]) -> set[int]:
        """Ids of the given owners' notes that are marked sensitive (any category)."""
        wanted = json.dumps(sorted(set(int(o) for o in owner_ids)))
        rows = self._query(
            "SELECT id FROM notes WHERE owner_id IN (SELECT value FROM json_each(?)) AND sensitivity IS NOT NULL",
            (wanted,),
        )
        return {int(r[0]) for r in rows}

    def owner_version(self, owner_id: int) -> int:
        rows = self._query("SELECT version FROM owner_versions WHERE owner_id = ?", (owner_id,))
        return int(rows[0][0]) if rows else 0

    # ---- links and history ---------------------------------------------------------------------
    def add_link(self, a: int, b: int, kind: str) -> None:
        """Link two notes of the same owner both ways (re-linking replaces the kind)."""
        with self._write():
            owner = self._insert_link(a, b, kind, time.time())
            self._bump(owner)

    def links(self, note_id: int) -> list[Link]:
        return self._links_of([note_id]).get(note_id, [])

    def history(self, note_id: int) -> list[HistoryEntry]:
        with self._lock:
            rows = self._query(
                "SELECT history.id, note_id, at, reason, before, after, notes.owner_id FROM history "
                "JOIN notes ON notes.id = history.note_id WHERE note_id = ? ORDER BY history.id",
                (note_id,),
            )
            entries = []
            for entry_id, note, at, reason, before, after, owner in rows:
                opener = self._opener(int(owner))
                entries.append(
                    HistoryEntry(
                        int(note),
                        from_epoch(at),
                        reason,
                        json.loads(open_text(opener, before, history_aad(entry_id, note, owner, "before"))),
                        json.loads(open_text(opener, after, history_aad(entry_id, note, owner, "after"))),
                    )
                )
            return entries

    def _index(self, note_id: int, note: Note) -> None:
        text = indexed_text(note.content, note.keywords, note.tags, note.context, note.timestamp)
        self._conn.execute(
            "INSERT INTO note_fts (rowid, terms) VALUES (?, ?)", (note_id, index_terms(self._stem, note.owner_id, text))
        )

    def _insert_link(self, a: int, b: int, kind: str, now: float) -> int:
        if a == b:
            raise StoreError(f"note {a} cannot link to itself", "link two different notes")
        rows: list[tuple[Any, ...]] = [
            tuple(row) for row in self._conn.execute("SELECT id, owner_id FROM notes WHERE id IN (?, ?)", (a, b))
        ]
        owners = {int(row[0]): int(row[1]) for row in rows}
        missing = [n for n in (a, b) if n not in owners]
        if missing:
            raise StoreError(f"no note with id {missing[0]}", "link notes that exist")
        if owners[a] != owners[b]:
            raise StoreError(f"notes {a} and {b} belong to different users", "links never cross owners")
        for source, target in ((a, b), (b, a)):
            self._conn.execute(
                "INSERT INTO links (source_id, target_id, kind, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(source_id, target_id) DO UPDATE SET kind = excluded.kind",
                (source, target, kind, now),
            )
        return owners[a]

    def _links_of(self, note_ids: list[int]) -> dict[int, list[Link]]:
        if not note_ids:
            return {}
        rows = self._query(
            "SELECT source_id, target_id, kind FROM links "
            "WHERE source_id IN (SELECT value FROM json_each(?)) ORDER BY source_id, target_id",
            (json.dumps(note_ids),),
        )
        out: dict[int, list[Link]] = {}
        for source, target, kind in rows:
            out.setdefault(int(source), []).append(Link(int(target), kind))
        return out

    def _note(self, row: tuple[Any, ...], links: list[Link]) -> Note:
        note_id, owner_id = int(row[0]), int(row[1])
        opener = self._opener(owner_id)
        content, keywords, tags, context = (
            open_text(opener, value, note_aad(note_id, owner_id, name))
            for name, value in zip(NOTE_SEALED_FIELDS, (row[3], row[5], row[6], row[7]), strict=True)
        )
        return Note(
            id=note_id,
            owner_id=owner_id,
            modality=row[2],
            content=content,
            timestamp=from_epoch(row[4]),
            keywords=list(json.loads(keywords)),
            tags=list(json.loads(tags)),
            context=context,
            embedding=_blob_to_vector(row[8]),
            links=links,
            source=row[9],
            source_ref=row[10],
            created_at=from_epoch(row[11]),
            updated_at=from_epoch(row[12]),
            scope=_scope_of(row[17], row[18]),
            author_id=None if row[13] is None else int(row[13]),
            last_used_at=None if row[14] is None else from_epoch(row[14]),
            reinforcements=int(row[15]),
            archived_at=None if row[16] is None else from_epoch(row[16]),
            sensitivity=row[19],
        )


def _scope_of(kind: str, name: str) -> str:
    if kind == GROUP:
        return name  # stored as "group:NAME", which is the scope's own spelling
    return "public" if kind == PUBLIC else "personal"


def _checked_sensitivity(value: str | None) -> str | None:
    from kiosk.memory.sensitivity import validate_category

    try:
        return validate_category(value)
    except KioskError as exc:
        raise StoreError(exc.message, exc.hint) from exc


def _changes(old: Note, new: Note) -> tuple[dict[str, Any], dict[str, Any]]:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for name in _TRACKED_FIELDS:
        old_value, new_value = getattr(old, name), getattr(new, name)
        if name == "timestamp":
            if math.isclose(to_epoch(old_value), to_epoch(new_value)):
                continue
            old_value, new_value = old_value.isoformat(), new_value.isoformat()
        if old_value != new_value:
            before[name], after[name] = old_value, new_value
    return before, after
