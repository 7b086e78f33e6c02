"""The memory store on PostgreSQL + pgvector, one memory shared by a fleet of terminals: the PostgreSQL adapter
of the shared store logic (kiosk/memory/sql/).

Same semantics as SqliteStore for every operation (tests/memory/test_store_contract.py runs one suite against
both). What differs underneath:
- Every call is one transaction that first declares whose rows it may see (`kiosk.owner_ids`, SET LOCAL):
  the owners named by the call (knn, owner_matrix, list_notes, add_note...), the owners of an enclosing
  `owner_scope(...)` (the gate's result), or, for an administrative call that names no owner outside any
  scope, all owners. Row-level security (kiosk/memory/pg_schema.py) enforces that in the database.
- knn: a pool of at most `exact_pool_max` notes (a person's own memory), or one that is a small share of
  the table, is scanned exactly, like sqlite-vec does; a larger pool that is a fair share of all notes
  (groups, a public scope) uses the HNSW cosine index with pgvector's iterative scan so the owner filter
  cannot starve the result.
- Lexical search: PostgreSQL's English text search over the `search` vector each note row carries (content,
  keywords, tags, context and date forms, as SQLite's FTS5 index holds), GIN-indexed.
- Concurrency: writers on other terminals run at READ COMMITTED; links are written in (min, max) order and
  a deadlock or serialization failure retries the whole call, so concurrent terminals lose nothing.
- `add_note(..., idempotency_key=...)`: a note re-sent after a lost acknowledgement or by the offline queue
  is stored once (unique `client_key`).
- At rest (with a master key): the sealed-row layout of kiosk/memory/pg_sealing.py.
- A lost connection raises StoreUnavailable and the next call reconnects.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import errors as pg_errors

from kiosk.errors import StoreError, StoreUnavailable
from kiosk.memory.checks import as_vector, checked_sensitivity
from kiosk.memory.lexical import STOPWORDS, indexed_text
from kiosk.memory.note import HistoryEntry, Note, to_epoch
from kiosk.memory.pg_schema import FLEET_LATEST_VERSION, FLEET_MIGRATIONS
from kiosk.memory.pg_sealing import PgRowFormat
from kiosk.memory.row_sealing import KeyRing
from kiosk.memory.sql.store import SqlStore
from kiosk.memory.sql.tx import ALL, Dialect, Owners, Tx, owner_list
from kiosk.security.sealing import MasterKey

log = logging.getLogger(__name__)

MAX_K = 4096
"""The largest k a k-NN query accepts: the SQLite store's bound, so retrieval asks both stores alike."""
EXACT_POOL_MAX = 2_000
"""Pools up to this many notes are searched exactly (a person's memory)."""
HNSW_MIN_SHARE = 0.01
"""Larger pools go through the HNSW graph only when they are at least this share of all notes: below it the
walk visits mostly other owners' nodes (one owner's 0.1 % of 100k notes: 269 ms at recall 0.64 through HNSW vs
8 ms exact; a 100-owner pool's 10 %: 18 ms at recall 0.98 vs 521 ms exact)."""
HNSW_EF_SEARCH = 200
CONNECT_TIMEOUT_S = 5
RETRIES = 5
_MIGRATION_LOCK = 0x6B696F736B  # advisory lock id: one process migrates a fresh fleet database at a time
_WORD = re.compile(r"[a-z0-9]+")

T = TypeVar("T")
Cursor = psycopg.Cursor[tuple[Any, ...]]
__all__ = ["PostgresStore", "StoreUnavailable"]


def _vector(value: Any) -> np.ndarray:
    """A pgvector value as float32 (binary results load as pgvector's Vector, text ones as arrays)."""
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32)


POSTGRES = Dialect(
    in_ids="{} = ANY(?)",
    bind_ids=lambda ids: [int(i) for i in ids],
    bind_vector=lambda vector: vector,  # pgvector's dumper takes the array
    load_vector=_vector,
    greatest="greatest",
    no_limit=None,
    note_sealing=", n.sealed",
    history_sealing=", h.sealed",
    clear_note="n.sealed IS NULL",
    clear_history="h.sealed IS NULL",
    insert_note_suffix=" ON CONFLICT DO NOTHING RETURNING id",  # client_key and (owner_id, source_ref) are unique
    expressions={"search": "to_tsvector('english', ?)"},
    owner_columns=True,
    row_locks=True,
)


@lru_cache(maxsize=512)
def _psycopg_statement(statement: str) -> str:
    """`?` placeholders as psycopg's `%s` (a literal `%` doubled)."""
    return statement.replace("%", "%%").replace("?", "%s")


class _Cursor:
    """`Tx` on a psycopg cursor of the running transaction."""

    def __init__(self, cursor: Cursor) -> None:
        self.cursor = cursor

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.cursor.execute(_psycopg_statement(statement), params)
        return self.cursor.fetchall() if self.cursor.description else []

    def one(self, statement: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        self.cursor.execute(_psycopg_statement(statement), params)
        return self.cursor.fetchone() if self.cursor.description else None

    def run(self, statement: str, params: Sequence[Any] = ()) -> int:
        self.cursor.execute(_psycopg_statement(statement), params)
        return self.cursor.rowcount


class PostgresStore(PgRowFormat, SqlStore):
    """`Store` on a PostgreSQL database with pgvector, shared by many terminals."""

    dialect = POSTGRES
    max_k = MAX_K
    locked_out = (
        "the fleet memory database is encrypted",
        "open it with the fleet's master key (security.encrypt_at_rest and security.key_file)",
    )
    wrong_key = (
        "the fleet memory database was sealed with another master key",
        "copy the fleet's master key to this terminal (security.key_file or its keyring entry)",
    )

    def __init__(
        self,
        url: str,
        *,
        exact_pool_max: int = EXACT_POOL_MAX,
        hnsw_min_share: float = HNSW_MIN_SHARE,
        migrate: bool = True,
        master_key: MasterKey | None = None,
    ) -> None:
        """`master_key` seals note contents and templates at rest, as on SQLite (every terminal of the fleet
        needs the same key); a database once opened with a key refuses terminals without it."""
        self.url = url
        self._keys = KeyRing(master_key, POSTGRES) if master_key is not None else None
        self.exact_pool_max = exact_pool_max
        self.hnsw_min_share = hnsw_min_share
        self._lock = threading.RLock()
        self._local = threading.local()
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._connect()
        if migrate:
            self._migrate()
        self._register_vector()
        self._open_sealing()
        self._unindex_sensitive_terms()

    # ---- lifecycle ---------------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.OperationalError as exc:
            self._conn = None
            raise StoreUnavailable(
                f"fleet memory database is unreachable ({_first_line(exc)})",
                "check the network and the store.url setting; notes are queued locally meanwhile",
            ) from exc
        if getattr(self, "_vector_ready", False):
            self._register_vector()
        return self._conn

    def _register_vector(self) -> None:
        from pgvector.psycopg import register_vector

        assert self._conn is not None
        try:
            register_vector(self._conn)
        except psycopg.ProgrammingError as exc:
            raise StoreError(
                "the fleet database has no pgvector extension",
                "install pgvector on the server and open the store once with the database owner's URL",
            ) from exc
        self._vector_ready = True

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def schema_version(self) -> int:
        return self._run(ALL, lambda cur: _schema_version(cur))

    def _migrate(self) -> None:
        conn = self._connect()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                current = _schema_version(conn.cursor())
                if current > FLEET_LATEST_VERSION:
                    raise StoreError(
                        f"fleet database has schema version {current}, newer than this build ({FLEET_LATEST_VERSION})",
                        "run a newer kiosk build",
                    )
                if current == FLEET_LATEST_VERSION:
                    return
                conn.execute("CREATE TABLE IF NOT EXISTS kiosk_schema (version INTEGER NOT NULL)")
                for version in range(current, FLEET_LATEST_VERSION):
                    FLEET_MIGRATIONS[version](conn)
                conn.execute("DELETE FROM kiosk_schema")
                conn.execute("INSERT INTO kiosk_schema (version) VALUES (%s)", (FLEET_LATEST_VERSION,))
        except pg_errors.InsufficientPrivilege as exc:
            raise StoreError(
                "this role may not create or upgrade the fleet schema",
                "open the store once with the database owner's URL (docs/fleet.md, Setting up)",
            ) from exc
        log.info("fleet database at schema version %d", FLEET_LATEST_VERSION)

    # ---- transactions ------------------------------------------------------------------------------
    @contextmanager
    def owner_scope(self, owner_ids: Sequence[int]) -> Iterator[None]:
        """Calls inside see only these owners' rows (id-based calls included): wrap a gated request in it."""
        previous = getattr(self._local, "scope", ALL)
        self._local.scope = tuple(owner_list(owner_ids))
        try:
            yield
        finally:
            self._local.scope = previous

    def _current_scope(self) -> tuple[int, ...] | None:
        return getattr(self._local, "scope", ALL)

    def _reading(self, owners: Owners, work: Callable[[Tx], T]) -> T:
        return self._run(owners, lambda cur: work(_Cursor(cur)), binary=True)

    _writing = _reading  # every call is one transaction, reads included

    def _run(self, owners: Owners, work: Callable[[Cursor], T], *, binary: bool = False) -> T:
        """Run `work` in one transaction that sees `owners`' rows (None: all), retrying deadlocks."""
        scope = self._current_scope()
        if owners is not None:
            visible = owner_list(owners)
            if scope is not None:
                visible = [o for o in visible if o in scope]
        else:
            visible = list(scope) if scope is not None else []
        all_owners = owners is None and scope is None
        with self._lock:
            for attempt in range(RETRIES):
                conn = self._connect()
                try:
                    with conn.transaction(), conn.cursor(binary=binary) as cur:
                        cur.execute(
                            "SELECT set_config('kiosk.owner_ids', %s, true), set_config('kiosk.all_owners', %s, true)",
                            ("{" + ",".join(str(o) for o in visible) + "}", "on" if all_owners else "off"),
                        )
                        try:
                            return work(cur)
                        except BaseException:
                            if self._keys is not None:  # a key made in a rolled-back transaction is not reused
                                self._keys.forget_cached_keys()
                            raise
                except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                    if attempt == RETRIES - 1:
                        raise
                    time.sleep(0.01 * (attempt + 1))
                except psycopg.OperationalError as exc:
                    conn.close()
                    raise StoreUnavailable(
                        f"lost the fleet memory database ({_first_line(exc)})",
                        "check the network; the call can be retried",
                    ) from exc
                except pg_errors.InsufficientPrivilege as exc:
                    raise StoreError(
                        f"the fleet database refused this for the current owners ({_first_line(exc)})",
                        "a gated request can only touch the gate's owners' memory",
                    ) from exc
                except psycopg.Error as exc:
                    raise StoreError(f"fleet database error ({_first_line(exc)})", "see the server log") from exc
        raise AssertionError("unreachable")

    def _next_id(self, tx: Tx, table: str) -> int:
        row = tx.one("SELECT nextval(pg_get_serial_sequence(?, 'id'))", (table,))
        assert row is not None
        return int(row[0])

    # ---- notes: idempotent adds and migration ------------------------------------------------------
    def add_note(self, note: Note, *, idempotency_key: str | None = None) -> Note:
        """Store a new note with its links in one transaction; with a key already stored, return that note."""
        return self._add_note(note, idempotency_key)

    def _stored(self, note_id: int, owner_id: int | None = None) -> Note:
        if owner_id is None:
            return super()._stored(note_id)
        with self.owner_scope([owner_id]):
            return super()._stored(note_id)

    def import_note(self, note: Note, key: str, history: Sequence[HistoryEntry] = ()) -> tuple[int, bool]:
        """Copy a note from another store keeping its times, strength, archive state and history (migration);
        (id, newly stored). Links are left to add_link once both ends exist. A key stored before returns that
        note untouched."""
        embedding = as_vector(note.embedding, "note embedding") if note.embedding is not None else None
        if embedding is None or note.created_at is None or note.updated_at is None:
            raise StoreError(f"note {note.id} has no embedding or times to import", "import stored notes")
        times = (to_epoch(note.created_at), to_epoch(note.updated_at))
        sensitivity = checked_sensitivity(note.sensitivity)
        retention = (_epoch(note.last_used_at), int(note.reinforcements), _epoch(note.archived_at))

        def insert(tx: Tx) -> tuple[int, bool]:
            note_id, created = self._insert_note_row(tx, note, embedding, sensitivity, times, key, retention)
            if created:
                for entry in history:
                    at = to_epoch(entry.at)
                    self._insert_history(tx, note_id, note.owner_id, at, entry.reason, entry.before, entry.after)
                self._bump(tx, note.owner_id)
            return note_id, created

        return self._writing([note.owner_id], insert)

    def keyed_notes(self, keys: Sequence[str]) -> dict[str, int]:
        """Note ids by idempotency key, for the keys that are stored (migration verification, resumption)."""
        rows = self._reading(
            ALL, lambda tx: tx.rows("SELECT client_key, id FROM notes WHERE client_key = ANY(?)", (list(keys),))
        )
        return {str(key): int(note_id) for key, note_id in rows}

    def _index_columns(self, note: Note) -> dict[str, Any]:
        if self._keys is not None and note.sensitivity is not None:
            return {"search": ""}  # the tsvector is readable at rest: a sealed sensitive note is found by its vector
        return {"search": indexed_text(note.content, note.keywords, note.tags, note.context, note.timestamp)}

    def _unindex_sensitive_terms(self) -> None:
        """A sealed store indexed before sensitive notes were kept out of the lexical index: their terms go."""
        if self._keys is not None:
            self._writing(
                ALL,
                lambda tx: tx.run(
                    "UPDATE notes SET search = ''::tsvector WHERE sensitivity IS NOT NULL AND search <> ''::tsvector"
                ),
            )

    # ---- search ------------------------------------------------------------------------------------
    def _knn_rows(self, tx: Tx, owners: list[int], vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        statement, params = self._knn_statement(tx, owners, vector, k)
        return [(int(note_id), 1.0 - float(distance)) for note_id, distance in tx.rows(statement, params)]

    def explain_knn(self, owner_ids: Sequence[int], query: np.ndarray, k: int) -> str:
        """PostgreSQL's plan for the statement knn() runs (operations, benchmark, tests)."""
        owners, vector = owner_list(owner_ids), as_vector(query, "query embedding")

        def explain(tx: Tx) -> str:
            statement, params = self._knn_statement(tx, owners, vector, k)
            return "\n".join(str(row[0]) for row in tx.rows("EXPLAIN " + statement, params))

        return self._reading(owners, explain)

    def _knn_statement(self, tx: Tx, owners: list[int], vector: np.ndarray, k: int) -> tuple[str, tuple[Any, ...]]:
        """Exact scan of a small or selective pool; the HNSW index (iterative scan, so the owner filter cannot
        starve it) for a large pool that is a fair share of the table."""
        table = tx.one("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'notes'::regclass")
        share_floor = math.ceil(self.hnsw_min_share * float(table[0] if table else 0))
        counted = tx.one(
            "SELECT count(*) FROM (SELECT 1 FROM notes WHERE owner_id = ANY(?) AND archived_at IS NULL LIMIT ?) "
            "AS pool",
            (owners, max(self.exact_pool_max, share_floor) + 1),
        )
        pool = int(counted[0]) if counted else 0
        if pool <= self.exact_pool_max or pool < share_floor:
            return (
                "WITH pool AS MATERIALIZED (SELECT id, embedding FROM notes WHERE owner_id = ANY(?) "
                "AND archived_at IS NULL) "
                "SELECT id, embedding <=> ? AS distance FROM pool ORDER BY distance, id LIMIT ?",
                (owners, vector, k),
            )
        # The planner would sort the owner's rows rather than walk the graph; the graph is what scales.
        tx.one(
            "SELECT set_config('hnsw.ef_search', ?, true), set_config('hnsw.iterative_scan', 'strict_order', true), "
            "set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), "
            "set_config('enable_sort', 'off', true)",
            (str(max(HNSW_EF_SEARCH, k)),),
        )
        return (
            "SELECT id, embedding <=> ? AS distance FROM notes WHERE owner_id = ANY(?) AND archived_at IS NULL "
            "ORDER BY embedding <=> ? LIMIT ?",
            (vector, owners, vector, k),
        )

    def _lexical_rows(self, tx: Tx, owners: list[int], query_text: str, k: int) -> list[tuple[int, float]]:
        """Full-text rank of the stored `search` vector (GIN-indexed) against any of the question's words."""
        words = [w for w in _WORD.findall(query_text.casefold()) if w not in STOPWORDS][:64]
        if not words:
            return []
        # Words are letters and digits only, so nothing from a question is tsquery syntax.
        any_word = " | ".join(dict.fromkeys(words))
        rows = tx.rows(
            "SELECT id, ts_rank_cd(search, q) AS rank FROM notes, to_tsquery('english', ?) AS q "
            "WHERE owner_id = ANY(?) AND archived_at IS NULL AND search @@ q ORDER BY rank DESC, id LIMIT ?",
            (any_word, owners, k),
        )
        return [(int(note_id), float(rank)) for note_id, rank in rows]

    def _matrix(self, embeddings: list[Any]) -> np.ndarray:
        return np.stack([_vector(value) for value in embeddings])


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _schema_version(cur: Any) -> int:
    if cur.execute("SELECT to_regclass('kiosk_schema')").fetchone()[0] is None:
        return 0
    row = cur.execute("SELECT version FROM kiosk_schema").fetchone()
    return int(row[0]) if row else 0


def _epoch(moment: datetime | None) -> float | None:
    return None if moment is None else to_epoch(moment)
