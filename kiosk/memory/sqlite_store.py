"""The memory store on SQLite + sqlite-vec (through apsw, which can load extensions): the SQLite adapter of the
shared store logic (kiosk/memory/sql/).

Durability: WAL journal with synchronous=FULL, one transaction per write call, so a note whose
`add_note` returned survives a crash of the process (and of the machine). Readers on other
connections see the last committed state while a writer is busy (WAL). One connection per store;
calls on the same store from several threads are serialised by a lock.

Vector search runs inside sqlite-vec: a vec0 table partitioned by owner, queried once per allowed
owner with `owner_id = ?` (vec0 partition keys take equality constraints), and the per-owner
top-k lists merged. Notes of owners that were not asked for are never scanned.

At rest (with a master key): note texts, history and templates are sealed per owner (kiosk/memory/
sqlite_sealing.py); vectors stay in clear for search. Erasure zeroes what it deletes (secure_delete, vec0
slots), merges any FTS5 index, gives pages back and empties the WAL, so deleted text is gone from every file.

Lexical search (BM25) runs in a contentless FTS5 table kept in the same transaction as each note row; its
terms are owner-prefixed stems, so a query (one per allowed owner) names and reads that owner's terms only.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import apsw
import numpy as np
import sqlite_vec

from kiosk.errors import StoreError
from kiosk.memory.lexical import index_terms, indexed_text, match_expression, query_terms, stemmer
from kiosk.memory.note import EMBEDDING_DIM, Note
from kiosk.memory.pool_bm25 import FUNCTION as POOL_BM25
from kiosk.memory.pool_bm25 import pool_hits
from kiosk.memory.pool_bm25 import register as register_pool_bm25
from kiosk.memory.records import NOTES_WITH_OWNER, vector_from_blob
from kiosk.memory.row_sealing import KeyRing
from kiosk.memory.schema import LATEST_VERSION, MIGRATIONS
from kiosk.memory.sql.store import SqlStore
from kiosk.memory.sql.tx import ALL, Dialect, Owners, Tx
from kiosk.memory.sqlite_sealing import SqliteRowFormat
from kiosk.security.private_files import private_dir, private_file, tighten_existing
from kiosk.security.sealing import MasterKey

log = logging.getLogger(__name__)
T = TypeVar("T")

VEC0_MAX_K = 4096
"""The largest k a vec0 KNN query accepts."""
BUSY_TIMEOUT_MS = 10_000
MMAP_BYTES = 1 << 30
"""Reads go through a memory map of up to 1 GiB instead of read() calls into SQLite's 2 MB page cache: one
owner's vec0 chunk alone is 1.5 MB (1,024 slots x 384 float32), so every KNN evicted the lexical index's pages
and copied the chunk again; mapped, a query reads it in place. Writes still go through the WAL as before."""

SQLITE = Dialect(
    in_ids="{} IN (SELECT value FROM json_each(?))",
    bind_ids=lambda ids: json.dumps([int(i) for i in ids]),
    bind_vector=lambda vector: vector.tobytes(),
    load_vector=vector_from_blob,
    greatest="max",
    no_limit=-1,
    note_sealing="",
    history_sealing="",
    clear_note="typeof(n.content) = 'text' OR typeof(n.keywords) = 'text' OR typeof(n.tags) = 'text' "
    "OR typeof(n.context) = 'text'",
    clear_history="typeof(h.before) = 'text' OR typeof(h.after) = 'text'",
    insert_note_suffix=" ON CONFLICT DO NOTHING RETURNING id",  # (owner_id, source_ref) is unique
)


class _Connection:
    """`Tx` on the store's apsw connection (the caller holds the store's lock)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.conn.execute(statement, params)]

    def one(self, statement: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.rows(statement, params)
        return rows[0] if rows else None

    def run(self, statement: str, params: Sequence[Any] = ()) -> int:
        for _ in self.conn.execute(statement, params):
            pass
        return int(self.conn.changes())


class SqliteStore(SqliteRowFormat, SqlStore):
    """`Store` on one SQLite file (or ':memory:')."""

    dialect = SQLITE
    max_k = VEC0_MAX_K

    def __init__(
        self, path: Path | str, *, backup_dir: Path | None = None, master_key: MasterKey | None = None
    ) -> None:
        """`master_key` seals note contents and templates at rest (None: stored in clear, e.g. for evaluation
        stores); a database once opened with a key refuses to open without it."""
        self.path = Path(path) if str(path) != ":memory:" else None
        self._lock = threading.RLock()
        self._keys = KeyRing(master_key, SQLITE) if master_key is not None else None
        where = self.path or ":memory:"
        self.locked_out = (
            f"memory database {where} is encrypted",
            "open it through the kiosk (which loads the master key), not as a plain store",
        )
        self.wrong_key = (
            f"memory database {where} was sealed with another master key",
            "use the key file or keyring entry this database was created with (see security.key_file)",
        )
        if self.path is not None:
            self._private_files(self.path)
        try:
            self._conn = apsw.Connection(str(path))
            self._conn.enable_load_extension(True)
            self._conn.load_extension(sqlite_vec.loadable_path())
            self._conn.enable_load_extension(False)
            self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            self._stem = stemmer(self._conn)
            register_pool_bm25(self._conn)
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
            self._unindex_sensitive_terms()
        except apsw.Error as exc:
            raise StoreError(
                f"memory database {path} cannot be opened ({exc})",
                "check the file is a kiosk memory DB and not locked or damaged; restore a backup if it is",
            ) from exc

    # ---- lifecycle ---------------------------------------------------------------------------------
    @staticmethod
    def _private_files(path: Path) -> None:
        """The database and its -wal and -shm readable by their owner only: SQLite creates the -wal and -shm
        with the database file's mode, so the file is made 0600 before SQLite opens it."""
        if not path.parent.exists():
            private_dir(path.parent)
        private_file(path)
        tighten_existing(path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def schema_version(self) -> int:
        return self._version()

    def integrity_check(self) -> str:
        """'ok' when SQLite finds the file consistent, else its first complaint."""
        return "; ".join(str(row[0]) for row in self._query("PRAGMA integrity_check"))

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
        target = private_file(directory / f"{self.path.name}.v{version}-{time.strftime('%Y%m%d-%H%M%S')}.bak")
        destination = apsw.Connection(str(target))
        try:
            with destination.backup("main", self._conn, "main") as backup:
                while not backup.done:
                    backup.step(-1)
        finally:
            destination.close()
        log.info("backed up memory database (schema %d) to %s before migrating", version, target)
        return target

    # ---- transactions ------------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[None]:
        """One IMMEDIATE transaction (takes the write lock up front, so no upgrade deadlocks)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                if self._keys is not None:
                    self._keys.forget_cached_keys()
                raise
            self._conn.execute("COMMIT")

    def _writing(self, owners: Owners, work: Callable[[Tx], T]) -> T:
        with self._write():
            return work(_Connection(self._conn))

    def _reading(self, owners: Owners, work: Callable[[Tx], T]) -> T:
        with self._lock:
            try:
                return work(_Connection(self._conn))
            except apsw.BusyError as exc:
                raise StoreError("memory database is busy", "another process holds it; retry") from exc

    def _holds_key_check(self, tx: Tx) -> bool:
        """A database from before sealing at rest (schema < 3) has no key_check table yet."""
        return tx.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'key_check'") is not None and (
            super()._holds_key_check(tx)
        )

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._reading(ALL, lambda tx: tx.rows(sql, params))

    def _next_id(self, tx: Tx, table: str) -> int:
        """The id AUTOINCREMENT will give the next row."""
        row = tx.one(
            f"SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
            f"coalesce((SELECT max(id) FROM {table}), 0)) + 1",
            (table,),
        )
        assert row is not None
        return int(row[0])

    # ---- search ------------------------------------------------------------------------------------
    def _knn_rows(self, tx: Tx, owners: list[int], vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        blob = vector.tobytes()
        found: list[tuple[int, float]] = []
        for owner in owners:
            rows = tx.rows(
                "SELECT note_id, distance FROM note_vectors WHERE embedding MATCH ? AND k = ? AND owner_id = ?",
                (blob, k, owner),
            )
            found.extend((int(note_id), 1.0 - float(distance)) for note_id, distance in rows)
        return found

    def _lexical_rows(self, tx: Tx, owners: list[int], query_text: str, k: int) -> list[tuple[int, float]]:
        """BM25 over the FTS5 index; the question's content words are ORed."""
        terms = query_terms(self._stem, query_text)
        if not terms:
            return []
        if len(owners) == 1:
            rows = tx.rows(
                "SELECT rowid, bm25(note_fts) AS score FROM note_fts WHERE note_fts MATCH ? ORDER BY score LIMIT ?",
                (match_expression(owners[0], terms), k),
            )
            return [(int(note_id), -float(score)) for note_id, score in rows]
        hits = pool_hits(tx, owners, terms)
        marks = ", ".join("?" * len(hits))
        found: list[tuple[int, float]] = []
        for owner in owners:
            rows = tx.rows(
                f"SELECT rowid, {POOL_BM25}(note_fts, {marks}) AS score FROM note_fts WHERE note_fts MATCH ? "
                "ORDER BY score DESC LIMIT ?",
                (*hits, match_expression(owner, terms), k),
            )
            found.extend((int(note_id), float(score)) for note_id, score in rows)
        return found

    def _matrix(self, embeddings: list[Any]) -> np.ndarray:
        return np.frombuffer(b"".join(embeddings), dtype=np.float32).reshape(len(embeddings), EMBEDDING_DIM).copy()

    # ---- index upkeep: the vec0 and FTS5 tables ----------------------------------------------------
    def _index_note(self, tx: Tx, note_id: int, note: Note, embedding: np.ndarray) -> None:
        self._index_vector(tx, note_id, note.owner_id, embedding)
        self._index_terms(tx, note_id, note)

    def _reindex_note(self, tx: Tx, note: Note, *, archived: bool, embedding: np.ndarray | None) -> None:
        note_id = int(note.id or 0)
        if embedding is not None:
            tx.run("DELETE FROM note_vectors WHERE note_id = ?", (note_id,))
            if not archived:  # an archived note stays out of the index until it is restored
                self._index_vector(tx, note_id, note.owner_id, embedding)
        self._forget_lexical(tx, [note_id])
        if not archived:  # nor the lexical index
            self._index_terms(tx, note_id, note)

    def _restore_index(self, tx: Tx, note_id: int) -> None:
        row = tx.one(f"SELECT {self._note_columns} FROM {NOTES_WITH_OWNER} WHERE n.id = ?", (note_id,))
        assert row is not None
        note = self._note(row, [])
        assert note.embedding is not None
        self._index_note(tx, note_id, note, note.embedding)

    def _unindex(self, tx: Tx, note_ids: Sequence[int], *, erase: bool) -> None:
        if not note_ids:
            return
        if erase:  # vec0 only flags a deleted vector as invalid: overwrite its slot first so the floats are gone
            zero = np.zeros(EMBEDDING_DIM, dtype=np.float32).tobytes()
            for note_id in note_ids:
                tx.run("UPDATE note_vectors SET embedding = ? WHERE note_id = ?", (zero, int(note_id)))
        wanted = SQLITE.bind_ids(note_ids)
        tx.run("DELETE FROM note_vectors WHERE note_id IN (SELECT value FROM json_each(?))", (wanted,))
        self._forget_lexical(tx, note_ids)

    def _unindex_owner(self, tx: Tx, owner_id: int) -> None:
        self._unindex(
            tx, [int(r[0]) for r in tx.rows("SELECT id FROM notes WHERE owner_id = ?", (owner_id,))], erase=True
        )

    def _index_vector(self, tx: Tx, note_id: int, owner_id: int, embedding: np.ndarray) -> None:
        tx.run(
            "INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (?, ?, ?)",
            (note_id, owner_id, embedding.tobytes()),
        )

    def _index_terms(self, tx: Tx, note_id: int, note: Note) -> None:
        if self._keys is not None and note.sensitivity is not None:
            return  # the index's stems are readable at rest: a sealed sensitive note is found by its vector only
        text = indexed_text(note.content, note.keywords, note.tags, note.context, note.timestamp)
        tx.run(
            "INSERT INTO note_fts (rowid, terms) VALUES (?, ?)", (note_id, index_terms(self._stem, note.owner_id, text))
        )

    def _unindex_sensitive_terms(self) -> None:
        """A sealed store indexed before sensitive notes were kept out of the lexical index: their entries
        leave it, and the merge and vacuum of an erasure take their stems out of the files."""
        if self._keys is None:
            return
        find = (
            "SELECT n.id FROM notes n WHERE n.sensitivity IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM note_fts f WHERE f.rowid = n.id)"
        )
        if not self._query(find):
            return

        def forget(tx: Tx) -> int:
            ids = [int(r[0]) for r in tx.rows(find)]
            self._forget_lexical(tx, ids)
            return len(ids)

        removed = self._writing(ALL, forget)
        log.info("took %d sensitive notes out of the lexical index", removed)
        self._reclaim(full=False)

    def _forget_lexical(self, tx: Tx, note_ids: Sequence[int]) -> None:
        """Remove the notes from any FTS5 index (keyed by note id); harmless when already removed."""
        if not note_ids:
            return
        wanted = SQLITE.bind_ids(note_ids)
        for table in self._fts_tables():
            tx.run(f'DELETE FROM "{table}" WHERE rowid IN (SELECT value FROM json_each(?))', (wanted,))

    def _fts_tables(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'"
        ).fetchall()
        return [str(row[0]) for row in rows]

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
