"""The memory store on PostgreSQL + pgvector: one memory shared by a fleet of terminals.

Same semantics as SqliteStore for every operation (tests/memory/test_store.py runs against both). What
differs underneath:
- Every call is one transaction that first declares whose rows it may see (`kiosk.owner_ids`, SET LOCAL):
  the owners named by the call (knn, owner_matrix, list_notes, add_note...), the owners of an enclosing
  `owner_scope(...)` (the gate's result), or, for an administrative call that names no owner outside any
  scope, all owners. Row-level security (kiosk/memory/pg_schema.py) enforces that in the database.
- knn: a pool of at most `exact_pool_max` notes (a person's own memory), or one that is a small share of
  the table, is scanned exactly, like sqlite-vec does; a larger pool that is a fair share of all notes
  (groups, a public scope) uses the HNSW cosine index with pgvector's iterative scan so the owner filter
  cannot starve the result.
- Concurrency: writers on other terminals run at READ COMMITTED; links are written in (min, max) order and
  a deadlock or serialization failure retries the whole call, so concurrent terminals lose nothing.
- `add_note(..., idempotency_key=...)`: a note re-sent after a lost acknowledgement or by the offline queue
  is stored once (unique `client_key`).
- A lost connection raises StoreUnavailable and the next call reconnects.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NoReturn, TypeVar

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

from kiosk.errors import StoreError, StoreUnavailable
from kiosk.memory.lexical import STOPWORDS
from kiosk.memory.note import EMBEDDING_DIM, Group, HistoryEntry, Link, Note, Template, User, from_epoch, to_epoch
from kiosk.memory.pg_schema import FLEET_LATEST_VERSION, FLEET_MIGRATIONS
from kiosk.memory.sqlite_store import MAX_K, _as_vector, _blob_to_vector, _changes

log = logging.getLogger(__name__)

EXACT_POOL_MAX = 2_000
"""Pools up to this many notes are searched exactly (a person's memory)."""
HNSW_MIN_SHARE = 0.01
"""Larger pools go through the HNSW graph only when they are at least this share of all notes: below it the
walk visits mostly other owners' nodes (bench/results/fleet.md, 100k notes / 1,000 users: one owner's 0.1 %
took 269 ms at recall 0.64 through HNSW vs 8 ms exact; a 100-owner pool's 10 % took 18 ms at recall 0.98 vs
521 ms exact)."""

HNSW_EF_SEARCH = 200
CONNECT_TIMEOUT_S = 5
RETRIES = 5
_MIGRATION_LOCK = 0x6B696F736B  # advisory lock id: one process migrates a fresh fleet database at a time
_NOTE_COLUMNS = (
    "id, owner_id, modality, content, timestamp, keywords, tags, context, embedding, "
    "source, source_ref, created_at, updated_at"
)

_WORD = re.compile(r"[a-z0-9]+")

T = TypeVar("T")
Cursor = psycopg.Cursor[tuple[Any, ...]]
__all__ = ["PostgresStore", "StoreUnavailable", "validate_new_note"]

_ALL = None
"""Scope marker: an administrative call that may see every owner's rows."""


def _owner_list(owner_ids: Sequence[int]) -> list[int]:
    return sorted({int(o) for o in owner_ids})


class PostgresStore:
    """`Store` on a PostgreSQL database with pgvector, shared by many terminals."""

    def __init__(
        self,
        url: str,
        *,
        exact_pool_max: int = EXACT_POOL_MAX,
        hnsw_min_share: float = HNSW_MIN_SHARE,
        migrate: bool = True,
    ) -> None:
        self.url = url
        self.exact_pool_max = exact_pool_max
        self.hnsw_min_share = hnsw_min_share
        self._lock = threading.RLock()
        self._local = threading.local()
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._connect()
        if migrate:
            self._migrate()
        self._register_vector()

    # ---- lifecycle -----------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.OperationalError as exc:
            self._conn = None
            raise StoreUnavailable(
                f"fleet memory database is unreachable ({str(exc).strip().splitlines()[0]})",
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

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def schema_version(self) -> int:
        return self._run(_ALL, lambda cur: _schema_version(cur))

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

    # ---- transactions --------------------------------------------------------------------------
    @contextmanager
    def owner_scope(self, owner_ids: Sequence[int]) -> Iterator[None]:
        """Calls inside see only these owners' rows (id-based calls included): wrap a gated request in it."""
        previous = getattr(self._local, "scope", _ALL)
        self._local.scope = tuple(_owner_list(owner_ids))
        try:
            yield
        finally:
            self._local.scope = previous

    def _current_scope(self) -> tuple[int, ...] | None:
        return getattr(self._local, "scope", _ALL)

    def _run(self, owners: Sequence[int] | None, work: Callable[[Cursor], T], *, binary: bool = False) -> T:
        """Run `work` in one transaction that sees `owners`' rows (None: all), retrying deadlocks."""
        scope = self._current_scope()
        if owners is not None:
            visible = _owner_list(owners)
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
                        return work(cur)
                except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                    if attempt == RETRIES - 1:
                        raise
                    time.sleep(0.01 * (attempt + 1))
                except psycopg.OperationalError as exc:
                    conn.close()
                    raise StoreUnavailable(
                        f"lost the fleet memory database ({str(exc).strip().splitlines()[0]})",
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

    @staticmethod
    def _bump(cur: Cursor, owner_id: int) -> None:
        cur.execute(
            "INSERT INTO owner_versions (owner_id, version) VALUES (%s, 1) "
            "ON CONFLICT (owner_id) DO UPDATE SET version = owner_versions.version + 1",
            (owner_id,),
        )

    # ---- users ---------------------------------------------------------------------------------
    def add_user(self, name: str) -> User:
        name = name.strip()
        if not name:
            raise StoreError("a user needs a non-empty name", "give a name")
        now = time.time()

        def insert(cur: Cursor) -> int:
            cur.execute(
                "INSERT INTO users (name, created_at) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING RETURNING id",
                (name, now),
            )
            row = cur.fetchone()
            if row is None:
                raise StoreError(f"user '{name}' already exists", "pick another name or delete that user first")
            self._bump(cur, int(row[0]))
            return int(row[0])

        return User(self._run(_ALL, insert), name, from_epoch(now))

    def _user_rows(self, where: str, params: Sequence[Any]) -> list[User]:
        rows = self._run(
            _ALL, lambda cur: cur.execute(f"SELECT id, name, created_at FROM users {where}", params).fetchall()
        )
        return [User(int(r[0]), r[1], from_epoch(r[2])) for r in rows]

    def get_user(self, user_id: int) -> User | None:
        users = self._user_rows("WHERE id = %s", (user_id,))
        return users[0] if users else None

    def user_by_name(self, name: str) -> User | None:
        users = self._user_rows("WHERE name = %s", (name.strip(),))
        return users[0] if users else None

    def list_users(self) -> list[User]:
        return self._user_rows("ORDER BY id", ())

    def delete_user(self, user_id: int) -> None:
        """Delete a user with every note, link, history entry and template of theirs (foreign-key cascades)."""

        def delete(cur: Cursor) -> None:
            cur.execute("DELETE FROM users WHERE id = %s", (user_id,))
            self._bump(cur, user_id)

        self._run([user_id], delete)

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
        now = time.time()

        def replace(cur: Cursor) -> list[Template]:
            if cur.execute("SELECT 1 FROM users WHERE id = %s FOR KEY SHARE", (user_id,)).fetchone() is None:
                raise StoreError(f"no user with id {user_id}", "enroll the user first")
            cur.execute("DELETE FROM templates WHERE user_id = %s AND modality = %s", (user_id, modality))
            created = []
            for row in rows:
                cur.execute(
                    "INSERT INTO templates (user_id, modality, dimension, vector, model_sha256, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                    (user_id, modality, int(row.shape[0]), row.tobytes(), model_sha256, now),
                )
                template_id = int(cur.fetchone()[0])  # type: ignore[index]
                created.append(Template(template_id, user_id, modality, row, model_sha256, from_epoch(now)))
            self._bump(cur, user_id)
            return created

        return self._run([user_id], replace)

    def templates(self, modality: str | None = None) -> list[Template]:
        query = "SELECT id, user_id, modality, vector, model_sha256, created_at FROM templates"
        params: tuple[Any, ...] = ()
        if modality is not None:
            query += " WHERE modality = %s"
            params = (modality,)
        rows = self._run(_ALL, lambda cur: cur.execute(query + " ORDER BY user_id, id", params).fetchall())
        return [
            Template(int(r[0]), int(r[1]), r[2], _blob_to_vector(bytes(r[3])), r[4], from_epoch(r[5])) for r in rows
        ]

    # ---- notes ---------------------------------------------------------------------------------
    def add_note(self, note: Note, *, idempotency_key: str | None = None) -> Note:
        """Store a new note with its links in one transaction; with a key already stored, return that note."""
        embedding = validate_new_note(note)
        now = time.time()

        def insert(cur: Cursor) -> int:
            if cur.execute("SELECT 1 FROM users WHERE id = %s FOR KEY SHARE", (note.owner_id,)).fetchone() is None:
                raise StoreError(f"no user with id {note.owner_id}", "add the user before their notes")
            note_id = self._insert_note_row(cur, note, embedding, now, now, idempotency_key)
            if note_id is None:  # this key was stored before: the earlier call did commit
                existing = cur.execute("SELECT id FROM notes WHERE client_key = %s", (idempotency_key,)).fetchone()
                if existing is None:
                    raise StoreError(
                        f"idempotency key {idempotency_key!r} belongs to another owner's note", "use a fresh key"
                    )
                return int(existing[0])
            for link in note.links:
                self._insert_link(cur, note_id, link.target_id, link.kind, now)
            self._bump(cur, note.owner_id)
            return note_id

        note_id = self._run([note.owner_id], insert)
        with self.owner_scope([note.owner_id]):
            stored = self.get_note(note_id)
        assert stored is not None
        return stored

    def import_note(self, note: Note, key: str, history: Sequence[HistoryEntry] = ()) -> tuple[int, bool]:
        """Copy a note from another store keeping its times and history (migration); (id, newly stored).

        Links are left to add_link once both ends exist. A key stored before returns that note untouched.
        """
        embedding = _as_vector(note.embedding, "note embedding") if note.embedding is not None else None
        if embedding is None or note.created_at is None or note.updated_at is None:
            raise StoreError(f"note {note.id} has no embedding or times to import", "import stored notes")
        created, updated = to_epoch(note.created_at), to_epoch(note.updated_at)

        def insert(cur: Cursor) -> tuple[int, bool]:
            note_id = self._insert_note_row(cur, note, embedding, created, updated, key)
            if note_id is None:
                existing = cur.execute("SELECT id FROM notes WHERE client_key = %s", (key,)).fetchone()
                if existing is None:
                    raise StoreError(f"import key {key!r} belongs to another owner's note", "check the migration")
                return int(existing[0]), False
            for entry in history:
                cur.execute(
                    "INSERT INTO history (note_id, owner_id, at, reason, before, after) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    (note_id, note.owner_id, to_epoch(entry.at), entry.reason, Jsonb(entry.before), Jsonb(entry.after)),
                )
            self._bump(cur, note.owner_id)
            return note_id, True

        return self._run([note.owner_id], insert)

    @staticmethod
    def _insert_note_row(
        cur: Cursor, note: Note, embedding: np.ndarray, created: float, updated: float, key: str | None
    ) -> int | None:
        """Insert the note's row; its new id, or None when a row with this idempotency key already exists."""
        cur.execute(
            "INSERT INTO notes (owner_id, modality, content, timestamp, keywords, tags, context, embedding, "
            "source, source_ref, created_at, updated_at, client_key) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (client_key) DO NOTHING RETURNING id",
            (
                note.owner_id,
                note.modality,
                note.content,
                to_epoch(note.timestamp),
                Jsonb(note.keywords),
                Jsonb(note.tags),
                note.context,
                embedding,
                note.source,
                note.source_ref,
                created,
                updated,
                key,
            ),
        )
        row = cur.fetchone()
        return None if row is None else int(row[0])

    def keyed_notes(self, keys: Sequence[str]) -> dict[str, int]:
        """Note ids by idempotency key, for the keys that are stored (migration verification, resumption)."""
        rows = self._run(
            _ALL,
            lambda cur: cur.execute(
                "SELECT client_key, id FROM notes WHERE client_key = ANY(%s)", (list(keys),)
            ).fetchall(),
        )
        return {str(key): int(note_id) for key, note_id in rows}

    def get_note(self, note_id: int) -> Note | None:
        notes = self.get_notes([note_id])
        return notes[0] if notes else None

    def get_notes(self, ids: Sequence[int]) -> list[Note]:
        """Notes with these ids, in the order asked; missing (or, in a scope, foreign) ids are skipped."""
        if not ids:
            return []
        wanted = [int(i) for i in ids]

        def fetch(cur: Cursor) -> list[Note]:
            cur.execute(f"SELECT {_NOTE_COLUMNS} FROM notes WHERE id = ANY(%s)", (wanted,))
            by_id = {int(row[0]): row for row in cur.fetchall()}
            links = _links_of(cur, list(by_id))
            return [_note(by_id[i], links.get(i, [])) for i in wanted if i in by_id]

        return self._run(_ALL, fetch, binary=True)

    def list_notes(self, owner_id: int, limit: int | None = None, offset: int = 0) -> list[Note]:
        """The owner's notes in chronological order (timestamp, then id)."""

        def fetch(cur: Cursor) -> list[Note]:
            cur.execute(
                f"SELECT {_NOTE_COLUMNS} FROM notes WHERE owner_id = %s ORDER BY timestamp, id LIMIT %s OFFSET %s",
                (owner_id, limit, int(offset)),
            )
            rows = cur.fetchall()
            links = _links_of(cur, [int(r[0]) for r in rows])
            return [_note(row, links.get(int(row[0]), [])) for row in rows]

        return self._run([owner_id], fetch, binary=True)

    def count_notes(self, owner_id: int | None = None) -> int:
        if owner_id is None:
            return int(self._run(_ALL, lambda cur: cur.execute("SELECT count(*) FROM notes").fetchone()[0]))  # type: ignore[index]
        return int(
            self._run(
                [owner_id],
                lambda cur: cur.execute("SELECT count(*) FROM notes WHERE owner_id = %s", (owner_id,)).fetchone()[0],  # type: ignore[index]
            )
        )

    def source_refs(self, owner_id: int) -> set[str]:
        """Source references already stored for the owner (resumable imports skip these)."""
        rows = self._run(
            [owner_id],
            lambda cur: cur.execute(
                "SELECT source_ref FROM notes WHERE owner_id = %s AND source_ref IS NOT NULL", (owner_id,)
            ).fetchall(),
        )
        return {r[0] for r in rows}

    def update_note(self, note: Note, reason: str) -> Note:
        """Rewrite a stored note's fields (and vector if given); the change is recorded in its history."""
        if note.id is None:
            raise StoreError("cannot update a note that was never stored", "add_note it first")
        if not note.content.strip():
            raise StoreError("a note needs non-empty content", "give some text")
        embedding = _as_vector(note.embedding, "note embedding") if note.embedding is not None else None
        note_id = note.id
        now = time.time()

        def update(cur: Cursor) -> None:
            cur.execute(f"SELECT {_NOTE_COLUMNS} FROM notes WHERE id = %s FOR UPDATE", (note_id,))
            row = cur.fetchone()
            if row is None:
                raise StoreError(f"no note with id {note_id}", "it may have been deleted")
            old = _note(row, [])
            if old.owner_id != note.owner_id:
                raise StoreError(f"note {note_id} belongs to user {old.owner_id}", "notes never change owner")
            before, after = _changes(old, note)
            new_embedding = embedding
            if new_embedding is not None and old.embedding is not None and np.array_equal(new_embedding, old.embedding):
                new_embedding = None
            cur.execute(
                "UPDATE notes SET modality = %s, content = %s, timestamp = %s, keywords = %s, tags = %s, "
                "context = %s, embedding = coalesce(%s, embedding), updated_at = %s WHERE id = %s",
                (
                    note.modality,
                    note.content,
                    to_epoch(note.timestamp),
                    Jsonb(note.keywords),
                    Jsonb(note.tags),
                    note.context,
                    new_embedding,
                    now,
                    note_id,
                ),
            )
            if new_embedding is not None:
                before["embedding"], after["embedding"] = "previous", "re-encoded"
            cur.execute(
                "INSERT INTO history (note_id, owner_id, at, reason, before, after) VALUES (%s, %s, %s, %s, %s, %s)",
                (note_id, old.owner_id, now, reason, Jsonb(before), Jsonb(after)),
            )
            self._bump(cur, old.owner_id)

        # The owner named by the note must be visible: a foreign note looks missing inside a scope.
        scope = self._current_scope()
        self._run(None if scope is None else scope, update, binary=True)
        stored = self.get_note(note_id)
        assert stored is not None
        return stored

    def delete_note(self, note_id: int) -> None:
        """Delete the note, its history and every link from or to it (foreign-key cascades)."""

        def delete(cur: Cursor) -> None:
            row = cur.execute("DELETE FROM notes WHERE id = %s RETURNING owner_id", (note_id,)).fetchone()
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            self._bump(cur, int(row[0]))

        self._run(_ALL, delete)

    # ---- vectors -------------------------------------------------------------------------------
    def knn(self, owner_ids: Sequence[int], query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (note id, cosine similarity) among the given owners' notes only, best first."""
        vector = _as_vector(query, "query embedding")
        if k < 1 or k > MAX_K:
            raise StoreError(f"k={k} is out of range", f"use 1..{MAX_K}")
        owners = _owner_list(owner_ids)
        if not owners:
            return []

        def search(cur: Cursor) -> list[tuple[int, float]]:
            cur.execute(*self._knn_statement(cur, owners, vector, k))
            return [(int(note_id), 1.0 - float(distance)) for note_id, distance in cur.fetchall()]

        found = self._run(owners, search)
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found

    def lexical(self, owner_ids: Sequence[int], query_text: str, k: int) -> list[tuple[int, float]]:
        """Top-k (note id, full-text rank) among the given owners' notes only: any of the question's words.

        PostgreSQL's English text search over content, keywords, tags and context (the SQLite store also
        indexes date forms). No index: the owner filter comes first, so a person's pool is scanned.
        """
        if k < 1 or k > MAX_K:
            raise StoreError(f"k={k} is out of range", f"use 1..{MAX_K}")
        owners = _owner_list(owner_ids)
        words = [w for w in _WORD.findall(query_text.casefold()) if w not in STOPWORDS][:64]
        if not owners or not words:
            return []
        # Words are letters and digits only, so nothing from a question is tsquery syntax.
        any_word = " | ".join(dict.fromkeys(words))

        def search(cur: Cursor) -> list[tuple[int, float]]:
            cur.execute(
                "WITH q AS (SELECT to_tsquery('english', %s) AS query), "
                "pool AS (SELECT id, to_tsvector('english', content || ' ' || context || ' ' || keywords::text "
                "|| ' ' || tags::text) AS document FROM notes WHERE owner_id = ANY(%s)) "
                "SELECT id, ts_rank_cd(document, q.query) AS rank FROM pool, q WHERE document @@ q.query "
                "ORDER BY rank DESC, id LIMIT %s",
                (any_word, owners, k),
            )
            return [(int(note_id), float(rank)) for note_id, rank in cur.fetchall()]

        return self._run(owners, search)

    def explain_knn(self, owner_ids: Sequence[int], query: np.ndarray, k: int) -> str:
        """PostgreSQL's plan for the statement knn() runs (operations, benchmark, tests)."""
        owners, vector = _owner_list(owner_ids), _as_vector(query, "query embedding")

        def explain(cur: Cursor) -> str:
            statement, params = self._knn_statement(cur, owners, vector, k)
            return "\n".join(str(row[0]) for row in cur.execute("EXPLAIN " + statement, params).fetchall())

        return self._run(owners, explain)

    def _knn_statement(self, cur: Cursor, owners: list[int], vector: np.ndarray, k: int) -> tuple[str, tuple[Any, ...]]:
        """Exact scan of a small or selective pool; the HNSW index (iterative scan, so the owner filter cannot
        starve it) for a large pool that is a fair share of the table."""
        table = cur.execute("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'notes'::regclass").fetchone()
        share_floor = math.ceil(self.hnsw_min_share * float(table[0] if table else 0))
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM notes WHERE owner_id = ANY(%s) LIMIT %s) AS pool",
            (owners, max(self.exact_pool_max, share_floor) + 1),
        )
        pool = int(cur.fetchone()[0])  # type: ignore[index]
        if pool <= self.exact_pool_max or pool < share_floor:
            return (
                "WITH pool AS MATERIALIZED (SELECT id, embedding FROM notes WHERE owner_id = ANY(%s)) "
                "SELECT id, embedding <=> %s AS distance FROM pool ORDER BY distance, id LIMIT %s",
                (owners, vector, k),
            )
        # The planner would sort the owner's rows rather than walk the graph; the graph is what scales.
        cur.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'strict_order', true), "
            "set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), "
            "set_config('enable_sort', 'off', true)",
            (str(max(HNSW_EF_SEARCH, k)),),
        )
        return (
            "SELECT id, embedding <=> %s AS distance FROM notes WHERE owner_id = ANY(%s) "
            "ORDER BY embedding <=> %s LIMIT %s",
            (vector, owners, vector, k),
        )

    def owner_matrix(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(note ids int64, timestamps float64 epoch s, embeddings (n, 384) float32), chronological."""
        owners = _owner_list(owner_ids)
        if not owners:
            return np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros((0, EMBEDDING_DIM), np.float32)
        rows = self._run(
            owners,
            lambda cur: cur.execute(
                "SELECT id, timestamp, embedding FROM notes WHERE owner_id = ANY(%s) ORDER BY timestamp, id",
                (owners,),
            ).fetchall(),
            binary=True,
        )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        stamps = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        if not rows:
            return ids, stamps, np.zeros((0, EMBEDDING_DIM), np.float32)
        return ids, stamps, np.stack([_vector(r[2]) for r in rows])

    def owner_version(self, owner_id: int) -> int:
        row = self._run(
            _ALL,
            lambda cur: cur.execute("SELECT version FROM owner_versions WHERE owner_id = %s", (owner_id,)).fetchone(),
        )
        return int(row[0]) if row else 0

    # ---- not on the fleet store yet: groups, the public scope, archive ----------------------------------
    # Every note here is personal (docs/fleet.md). What reads as "none" answers truthfully (no group, no public
    # owner); what would create or move a note out of the personal scope is a clear error.
    def add_group(self, name: str) -> Group:
        _not_on_fleet("groups")

    def group_by_name(self, name: str) -> Group | None:
        _not_on_fleet("groups")

    def list_groups(self) -> list[Group]:
        return []

    def delete_group(self, group_id: int) -> None:
        _not_on_fleet("groups")

    def add_member(self, group_id: int, user_id: int) -> None:
        _not_on_fleet("groups")

    def remove_member(self, group_id: int, user_id: int) -> None:
        _not_on_fleet("groups")

    def members(self, group_id: int) -> list[User]:
        _not_on_fleet("groups")

    def groups_of(self, user_id: int) -> list[Group]:
        return []

    def public_owner_id(self) -> int | None:
        return None

    def retention_state(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, last use epoch s, reinforcements) by id: uses are not recorded here, so last use = timestamp."""
        ids, stamps, _ = self.owner_matrix(owner_ids)
        order = np.argsort(ids, kind="stable")
        return ids[order], stamps[order], np.zeros(len(ids), dtype=np.int64)

    def reinforce(self, note_ids: Sequence[int], at: datetime) -> None:
        """Uses are not recorded on the fleet store yet (no column for them): strength follows age only."""

    def archive_notes(self, note_ids: Sequence[int], at: datetime) -> int:
        if not note_ids:
            return 0
        _not_on_fleet("archiving faded notes")

    def restore_note(self, note_id: int, at: datetime) -> Note:
        _not_on_fleet("archiving faded notes")

    # ---- links and history ---------------------------------------------------------------------
    def add_link(self, a: int, b: int, kind: str) -> None:
        """Link two notes of the same owner both ways (re-linking replaces the kind)."""
        now = time.time()

        def link(cur: Cursor) -> None:
            self._bump(cur, self._insert_link(cur, a, b, kind, now))

        self._run(_ALL, link)

    def links(self, note_id: int) -> list[Link]:
        return self._run(_ALL, lambda cur: _links_of(cur, [note_id]).get(note_id, []))

    def history(self, note_id: int) -> list[HistoryEntry]:
        rows = self._run(
            _ALL,
            lambda cur: cur.execute(
                "SELECT note_id, at, reason, before, after FROM history WHERE note_id = %s ORDER BY id", (note_id,)
            ).fetchall(),
        )
        return [HistoryEntry(int(r[0]), from_epoch(r[1]), r[2], _json(r[3]), _json(r[4])) for r in rows]

    @staticmethod
    def _insert_link(cur: Cursor, a: int, b: int, kind: str, now: float) -> int:
        if a == b:
            raise StoreError(f"note {a} cannot link to itself", "link two different notes")
        cur.execute("SELECT id, owner_id FROM notes WHERE id = ANY(%s) FOR KEY SHARE", ([a, b],))
        owners = {int(row[0]): int(row[1]) for row in cur.fetchall()}
        missing = [n for n in (a, b) if n not in owners]
        if missing:
            raise StoreError(f"no note with id {missing[0]}", "link notes that exist")
        if owners[a] != owners[b]:
            raise StoreError(f"notes {a} and {b} belong to different users", "links never cross owners")
        low, high = sorted((a, b))
        for source, target in ((low, high), (high, low)):
            cur.execute(
                "INSERT INTO links (source_id, target_id, owner_id, kind, created_at) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (source_id, target_id) DO UPDATE SET kind = excluded.kind",
                (source, target, owners[a], kind, now),
            )
        return owners[a]


def _not_on_fleet(feature: str) -> NoReturn:
    raise StoreError(
        f"{feature}: not on the fleet store yet (every note there is personal)",
        "use the SQLite store (empty store.url) for groups, public notes and archiving (docs/fleet.md)",
    )


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def validate_new_note(note: Note) -> np.ndarray:
    """The checks add_note makes before touching the database (also before a note is queued offline)."""
    if note.id is not None:
        raise StoreError(f"note already has id {note.id}", "use update_note for stored notes")
    if not note.content.strip():
        raise StoreError("a note needs non-empty content", "give some text")
    if note.embedding is None:
        raise StoreError("a note needs its embedding before it is stored", "build notes with kiosk.memory.build")
    to_epoch(note.timestamp)
    return _as_vector(note.embedding, "note embedding")


def _schema_version(cur: Any) -> int:
    if cur.execute("SELECT to_regclass('kiosk_schema')").fetchone()[0] is None:
        return 0
    row = cur.execute("SELECT version FROM kiosk_schema").fetchone()
    return int(row[0]) if row else 0


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _vector(value: Any) -> np.ndarray:
    """A pgvector value as float32 (binary results load as pgvector's Vector, text ones as arrays)."""
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32)


def _links_of(cur: Cursor, note_ids: list[int]) -> dict[int, list[Link]]:
    if not note_ids:
        return {}
    cur.execute(
        "SELECT source_id, target_id, kind FROM links WHERE source_id = ANY(%s) ORDER BY source_id, target_id",
        (note_ids,),
    )
    out: dict[int, list[Link]] = {}
    for source, target, kind in cur.fetchall():
        out.setdefault(int(source), []).append(Link(int(target), kind))
    return out


def _note(row: Sequence[Any], links: list[Link]) -> Note:
    return Note(
        id=int(row[0]),
        owner_id=int(row[1]),
        modality=row[2],
        content=row[3],
        timestamp=from_epoch(row[4]),
        keywords=list(_json(row[5])),
        tags=list(_json(row[6])),
        context=row[7],
        embedding=_vector(row[8]),
        links=links,
        source=row[9],
        source_ref=row[10],
        created_at=from_epoch(row[11]),
        updated_at=from_epoch(row[12]),
    )
