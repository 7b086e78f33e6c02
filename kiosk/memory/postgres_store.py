"""The memory store on PostgreSQL + pgvector: one memory shared by a fleet of terminals.

Same semantics as SqliteStore for every operation (the `store` fixture of tests/memory/conftest.py runs the
store suites against both). What differs underneath:
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
- Scopes: groups and the public scope are pseudo-owners (rows of `users` of another kind), as on SQLite, so
  the owner policy covers them: a gate scope names the requester, their groups and the public owner.
- At rest (with a master key, kiosk/memory/pg_sealing.py): note fields, history and templates are sealed per
  owner; vectors and the text-search vector stay in clear for search, as on SQLite.
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
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

from kiosk.errors import StoreError, StoreUnavailable
from kiosk.memory.lexical import STOPWORDS, indexed_text
from kiosk.memory.note import EMBEDDING_DIM, Group, HistoryEntry, Link, Note, Template, User, from_epoch, to_epoch
from kiosk.memory.pg_schema import FLEET_LATEST_VERSION, FLEET_MIGRATIONS
from kiosk.memory.pg_sealing import FleetSealer, history_fields_aad, note_fields_aad, open_json, seal_json
from kiosk.memory.row_sealing import is_sealed_vector, template_aad
from kiosk.memory.sqlite_store import (
    GROUP,
    MAX_K,
    PERSON,
    PUBLIC,
    _as_vector,
    _blob_to_vector,
    _changes,
    _checked_sensitivity,
    _group_name,
    _scope_of,
)
from kiosk.security.sealing import Cipher, MasterKey, SealingError

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
    "n.id, n.owner_id, n.modality, n.content, n.timestamp, n.keywords, n.tags, n.context, n.embedding, "
    "n.source, n.source_ref, n.created_at, n.updated_at, n.author_id, n.last_used_at, n.reinforcements, "
    "n.archived_at, u.kind, u.name, n.sensitivity, n.sealed, k.generation, k.wrapped"
)
_NOTES_WITH_OWNER = "notes n JOIN users u ON u.id = n.owner_id LEFT JOIN user_keys k ON k.user_id = n.owner_id"
_GROUP_PREFIX = "group:"
_PUBLIC_NAME = "scope:public"
_RESERVED_PREFIXES = (_GROUP_PREFIX, "scope:")
_ACTIVE = "archived_at IS NULL"

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
        master_key: MasterKey | None = None,
    ) -> None:
        """`master_key` seals note contents and templates at rest, as on SQLite (every terminal of the fleet
        needs the same key); a database once opened with a key refuses terminals without it."""
        self.url = url
        self._sealer = FleetSealer(master_key) if master_key is not None else None
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

    # ---- sealing at rest -----------------------------------------------------------------------
    @property
    def encrypted(self) -> bool:
        return self._sealer is not None

    def _open_sealing(self) -> None:
        def check(cur: Cursor) -> int:
            has_check = cur.execute("SELECT 1 FROM key_check").fetchone() is not None
            if self._sealer is None:
                if has_check:
                    raise StoreError(
                        "the fleet memory database is encrypted",
                        "open it with the fleet's master key (security.encrypt_at_rest and security.key_file)",
                    )
                return 0
            # One transaction, as on SQLite: once the key check exists no row is written in clear.
            return self._seal_all_in_place(cur) if self._sealer.check_master(cur) else 0

        sealed = self._run(_ALL, check, binary=True)
        if sealed:
            log.info("sealed %d fleet memory rows that were stored in clear", sealed)

    def seal_plaintext_rows(self) -> int:
        """Encrypt in place every row still stored in clear (the first keyed open already does); sealed rows stay."""
        if self._sealer is None:
            return 0
        return self._run(_ALL, self._seal_all_in_place, binary=True)

    def _seal_all_in_place(self, cur: Cursor) -> int:
        sealer = self._sealer
        assert sealer is not None
        rows = cur.execute(
            "SELECT id, owner_id, content, keywords, tags, context FROM notes WHERE sealed IS NULL"
        ).fetchall()
        for note_id, owner_id, content, keywords, tags, context in rows:
            fields = {"content": content, "keywords": _json(keywords), "tags": _json(tags), "context": context}
            cipher = sealer.cipher(cur, int(owner_id), create=True)
            cur.execute(
                "UPDATE notes SET content = '', keywords = '[]', tags = '[]', context = '', sealed = %s "
                "WHERE id = %s AND sealed IS NULL",  # re-checked: another terminal may have sealed it meanwhile
                (seal_json(cipher, fields, note_fields_aad(int(note_id), int(owner_id))), note_id),
            )
        entries = cur.execute(
            "SELECT id, note_id, owner_id, before, after FROM history WHERE sealed IS NULL"
        ).fetchall()
        for entry_id, note_id, owner_id, before, after in entries:
            cipher = sealer.cipher(cur, int(owner_id), create=True)
            sealed = seal_json(
                cipher,
                {"before": _json(before), "after": _json(after)},
                history_fields_aad(entry_id, note_id, owner_id),
            )
            cur.execute(
                "UPDATE history SET before = '{}', after = '{}', sealed = %s WHERE id = %s AND sealed IS NULL",
                (sealed, entry_id),
            )
        templates = cur.execute(
            "SELECT id, user_id, modality, vector FROM templates WHERE length(vector) = dimension * 4"
        ).fetchall()
        for template_id, user_id, modality, vector in templates:
            cipher = sealer.cipher(cur, int(user_id), create=True)
            blob = cipher.seal(bytes(vector), template_aad(int(template_id), int(user_id), modality))
            cur.execute(
                "UPDATE templates SET vector = %s WHERE id = %s AND length(vector) = dimension * 4", (blob, template_id)
            )
        return len(rows) + len(entries) + len(templates)

    def _key(self, cur: Cursor, owner_id: int) -> Cipher | None:
        """The owner's data key for a write (created on first use; held against a concurrent re-key)."""
        if self._sealer is None:
            return None
        return self._sealer.cipher(cur, owner_id, create=True, lock=True)

    def _opened(self, owner_id: int, generation: Any, wrapped: Any) -> Cipher:
        if self._sealer is None:
            raise StoreError("the fleet memory database is encrypted", "open it with the fleet's master key")
        if wrapped is None:
            raise SealingError(f"owner {owner_id} has no data key", "the database was altered; restore a backup")
        return self._sealer.unwrapped(owner_id, int(generation), bytes(wrapped))

    def key_generation(self, user_id: int) -> int:
        """The owner's data-key generation (rises with every re-key; 0 when not encrypted)."""
        if self._sealer is None:
            return 0
        row = self._run(
            [user_id],
            lambda cur: cur.execute("SELECT generation FROM user_keys WHERE user_id = %s", (user_id,)).fetchone(),
        )
        return int(row[0]) if row else 0

    def rekey_user(self, user_id: int) -> int:
        """A new data key for the owner, every sealed row of theirs re-sealed with it in one transaction."""

        def rekey(cur: Cursor) -> int:
            generation = self._rekey(cur, user_id)
            self._bump(cur, user_id)
            return generation

        return self._run([user_id], rekey, binary=True)

    def _rekey(self, cur: Cursor, user_id: int) -> int:
        sealer = self._sealer
        if sealer is None:
            return 0
        cur.execute("SELECT 1 FROM user_keys WHERE user_id = %s FOR UPDATE", (user_id,))  # one re-key at a time
        old = sealer.cipher(cur, user_id, create=True)
        notes = cur.execute("SELECT id, sealed FROM notes WHERE owner_id = %s AND sealed IS NOT NULL", (user_id,))
        note_fields = [(int(i), open_json(old, blob, note_fields_aad(int(i), user_id))) for i, blob in notes.fetchall()]
        entries = cur.execute(
            "SELECT id, note_id, sealed FROM history WHERE owner_id = %s AND sealed IS NOT NULL", (user_id,)
        ).fetchall()
        history = [(int(e), int(n), open_json(old, blob, history_fields_aad(e, n, user_id))) for e, n, blob in entries]
        rows = cur.execute("SELECT id, modality, vector, dimension FROM templates WHERE user_id = %s", (user_id,))
        templates = [
            (int(t), modality, _open_template(old, int(t), user_id, modality, bytes(blob), int(dim)))
            for t, modality, blob, dim in rows.fetchall()
        ]
        new = sealer.rotate(cur, user_id)
        for note_id, fields in note_fields:
            cur.execute(
                "UPDATE notes SET sealed = %s WHERE id = %s",
                (seal_json(new, fields, note_fields_aad(note_id, user_id)), note_id),
            )
        for entry_id, note_id, fields in history:
            cur.execute(
                "UPDATE history SET sealed = %s WHERE id = %s",
                (seal_json(new, fields, history_fields_aad(entry_id, note_id, user_id)), entry_id),
            )
        for template_id, modality, vector in templates:
            cur.execute(
                "UPDATE templates SET vector = %s WHERE id = %s",
                (new.seal(vector, template_aad(template_id, user_id, modality)), template_id),
            )
        row = cur.execute("SELECT generation FROM user_keys WHERE user_id = %s", (user_id,)).fetchone()
        return int(row[0]) if row else 0

    def rotate_master_key(self, new_master: MasterKey) -> int:
        """Re-wrap every owner's data key under a new master key (run with the database owner's URL)."""
        sealer = self._sealer
        if sealer is None:
            raise StoreError("this memory database is not encrypted", "open it with its master key first")
        return self._run(_ALL, lambda cur: sealer.rewrap_all(cur, new_master))

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
                        try:
                            return work(cur)
                        except BaseException:
                            if self._sealer is not None:  # a key made in a rolled-back transaction is not reused
                                self._sealer.forget_cached_keys()
                            raise
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
        if name.casefold().startswith(_RESERVED_PREFIXES):
            raise StoreError(f"'{name}' looks like a scope name", "people's names cannot start with group: or scope:")
        now = time.time()
        user_id = self._add_owner(name, PERSON, now)
        if user_id is None:
            raise StoreError(f"user '{name}' already exists", "pick another name or delete that user first")
        return User(user_id, name, from_epoch(now))

    def _add_owner(self, name: str, kind: str, now: float) -> int | None:
        """A row of `users` (a person, a group or the public scope) with its data key; None if the name is taken."""

        def insert(cur: Cursor) -> int | None:
            cur.execute(
                "INSERT INTO users (name, created_at, kind) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (name, now, kind),
            )
            row = cur.fetchone()
            if row is None:
                return None
            owner_id = int(row[0])
            self._key(cur, owner_id)
            self._bump(cur, owner_id)
            return owner_id

        return self._run(_ALL, insert)

    def _user_rows(self, where: str, params: Sequence[Any], kind: str = PERSON) -> list[tuple[Any, ...]]:
        query = f"SELECT id, name, created_at FROM users WHERE kind = %s {where}"
        return self._run(_ALL, lambda cur: cur.execute(query, (kind, *params)).fetchall())

    def get_user(self, user_id: int) -> User | None:
        rows = self._user_rows("AND id = %s", (user_id,))
        return _user(rows[0]) if rows else None

    def user_by_name(self, name: str) -> User | None:
        rows = self._user_rows("AND name = %s", (name.strip(),))
        return _user(rows[0]) if rows else None

    def list_users(self) -> list[User]:
        return [_user(row) for row in self._user_rows("ORDER BY id", ())]

    def delete_user(self, user_id: int) -> None:
        """Delete a user with every note, link, history entry, template, membership and data key of theirs
        (foreign-key cascades). Group and public notes they said stay, without an author."""
        self._delete_owner(user_id, PERSON)

    def _delete_owner(self, owner_id: int, kind: str) -> None:
        def delete(cur: Cursor) -> None:
            cur.execute("DELETE FROM users WHERE id = %s AND kind = %s", (owner_id, kind))
            self._bump(cur, owner_id)

        self._run([owner_id], delete)
        if self._sealer is not None:
            self._sealer.forget_cached_keys()

    # ---- groups and the public scope -----------------------------------------------------------------
    def add_group(self, name: str) -> Group:
        clean = _group_name(name)
        now = time.time()
        group_id = self._add_owner(_GROUP_PREFIX + clean, GROUP, now)
        if group_id is None:
            raise StoreError(f"group '{clean}' already exists", "pick another name")
        return Group(group_id, clean, from_epoch(now))

    def group_by_name(self, name: str) -> Group | None:
        rows = self._user_rows("AND name = %s", (_GROUP_PREFIX + name.strip(),), GROUP)
        return _group(rows[0]) if rows else None

    def get_group(self, group_id: int) -> Group | None:
        rows = self._user_rows("AND id = %s", (group_id,), GROUP)
        return _group(rows[0]) if rows else None

    def list_groups(self) -> list[Group]:
        return [_group(row) for row in self._user_rows("ORDER BY name", (), GROUP)]

    def delete_group(self, group_id: int) -> None:
        """Delete a group with its memberships and every note of the group (an admin's decision)."""
        if self.get_group(group_id) is None:
            raise StoreError(f"no group with id {group_id}", "see `kiosk groups list`")
        self._delete_owner(group_id, GROUP)

    def add_member(self, group_id: int, user_id: int) -> None:
        def insert(cur: Cursor) -> None:
            kinds: dict[int, str] = dict(
                cur.execute(
                    "SELECT id, kind FROM users WHERE id = ANY(%s) FOR KEY SHARE", ([group_id, user_id],)
                ).fetchall()
            )
            if kinds.get(group_id) != GROUP:
                raise StoreError(f"no group with id {group_id}", "see `kiosk groups list`")
            if kinds.get(user_id) != PERSON:
                raise StoreError(f"no user with id {user_id}", "enroll the person first")
            cur.execute(
                "INSERT INTO group_members (group_id, user_id, added_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (group_id, user_id, time.time()),
            )
            self._bump(cur, user_id)

        self._run(_ALL, insert)

    def remove_member(self, group_id: int, user_id: int) -> None:
        def delete(cur: Cursor) -> None:
            cur.execute("DELETE FROM group_members WHERE group_id = %s AND user_id = %s", (group_id, user_id))
            if cur.rowcount == 0:
                raise StoreError(f"user {user_id} is not a member of group {group_id}", "see `kiosk groups list`")
            self._bump(cur, user_id)

        self._run(_ALL, delete)

    def members(self, group_id: int) -> list[User]:
        rows = self._run(
            _ALL,
            lambda cur: cur.execute(
                "SELECT u.id, u.name, u.created_at FROM group_members m JOIN users u ON u.id = m.user_id "
                "WHERE m.group_id = %s ORDER BY u.id",
                (group_id,),
            ).fetchall(),
        )
        return [_user(row) for row in rows]

    def groups_of(self, user_id: int) -> list[Group]:
        rows = self._run(
            _ALL,
            lambda cur: cur.execute(
                "SELECT g.id, g.name, g.created_at FROM group_members m JOIN users g ON g.id = m.group_id "
                "WHERE m.user_id = %s ORDER BY g.name",
                (user_id,),
            ).fetchall(),
        )
        return [_group(row) for row in rows]

    def public_owner_id(self) -> int:
        """The pseudo-owner of public notes (created on first use, once for the whole fleet)."""
        rows = self._user_rows("", (), PUBLIC)
        if rows:
            return int(rows[0][0])
        created = self._add_owner(_PUBLIC_NAME, PUBLIC, time.time())
        if created is not None:
            return created
        rows = self._user_rows("", (), PUBLIC)  # another terminal created it meanwhile
        if not rows:
            raise StoreError(f"the name '{_PUBLIC_NAME}' is taken by another row", "rename that row")
        return int(rows[0][0])

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
            found = cur.execute(
                "SELECT 1 FROM users WHERE id = %s AND kind = %s FOR KEY SHARE", (user_id, PERSON)
            ).fetchone()
            if found is None:
                raise StoreError(f"no user with id {user_id}", "enroll the user first")
            cur.execute("DELETE FROM templates WHERE user_id = %s AND modality = %s", (user_id, modality))
            if cur.rowcount:
                self._rekey(cur, user_id)  # re-enrollment: the old templates' key no longer opens anything
            cipher = self._key(cur, user_id)
            created = []
            for row in rows:
                template_id = _next_id(cur, "templates")
                blob = row.tobytes()
                if cipher is not None:
                    blob = cipher.seal(blob, template_aad(template_id, user_id, modality))
                cur.execute(
                    "INSERT INTO templates (id, user_id, modality, dimension, vector, model_sha256, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (template_id, user_id, modality, int(row.shape[0]), blob, model_sha256, now),
                )
                created.append(Template(template_id, user_id, modality, row, model_sha256, from_epoch(now)))
            self._bump(cur, user_id)
            return created

        return self._run([user_id], replace)

    def templates(self, modality: str | None = None) -> list[Template]:
        query = (
            "SELECT t.id, t.user_id, t.modality, t.vector, t.model_sha256, t.created_at, t.dimension, k.generation, "
            "k.wrapped FROM templates t LEFT JOIN user_keys k ON k.user_id = t.user_id"
        )
        params: tuple[Any, ...] = ()
        if modality is not None:
            query += " WHERE t.modality = %s"
            params = (modality,)
        rows = self._run(_ALL, lambda cur: cur.execute(query + " ORDER BY t.user_id, t.id", params).fetchall())
        templates = []
        for template_id, user_id, kind, blob, sha, created, dimension, generation, wrapped in rows:
            vector = bytes(blob)
            if is_sealed_vector(vector, int(dimension)):
                cipher = self._opened(int(user_id), generation, wrapped)
                vector = cipher.open(vector, template_aad(int(template_id), int(user_id), kind))
            templates.append(
                Template(int(template_id), int(user_id), kind, _blob_to_vector(vector), sha, from_epoch(created))
            )
        return templates

    def revoke_templates(self, user_id: int, modality: str | None = None) -> int:
        """Revoke (delete) the user's templates of `modality` (all when None); their notes stay, unreachable by
        the gate until the person is enrolled again. Returns how many templates were revoked."""

        def revoke(cur: Cursor) -> int:
            if modality is None:
                cur.execute("DELETE FROM templates WHERE user_id = %s", (user_id,))
            else:
                cur.execute("DELETE FROM templates WHERE user_id = %s AND modality = %s", (user_id, modality))
            revoked = cur.rowcount
            self._bump(cur, user_id)
            return revoked

        return self._run([user_id], revoke)

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

        _checked_sensitivity(note.sensitivity)

        def insert(cur: Cursor) -> tuple[int, bool]:
            note_id = self._insert_note_row(cur, note, embedding, created, updated, key, keep_retention=True)
            if note_id is None:
                existing = cur.execute("SELECT id FROM notes WHERE client_key = %s", (key,)).fetchone()
                if existing is None:
                    raise StoreError(f"import key {key!r} belongs to another owner's note", "check the migration")
                return int(existing[0]), False
            for entry in history:
                self._insert_history(
                    cur, note_id, note.owner_id, to_epoch(entry.at), entry.reason, entry.before, entry.after
                )
            self._bump(cur, note.owner_id)
            return note_id, True

        return self._run([note.owner_id], insert)

    def _insert_note_row(
        self,
        cur: Cursor,
        note: Note,
        embedding: np.ndarray,
        created: float,
        updated: float,
        key: str | None,
        *,
        keep_retention: bool = False,
    ) -> int | None:
        """Insert the note's row (sealed with its owner's key when the store seals); its new id, or None when a
        row with this idempotency key already exists. `keep_retention`: keep last use, reinforcements and the
        archive time the note carries (a migration), else it starts fresh (a new note)."""
        note_id = _next_id(cur, "notes")
        content, keywords, tags, context, sealed = self._note_fields(cur, note_id, note)
        retention = (
            (_epoch_or_none(note.last_used_at), int(note.reinforcements), _epoch_or_none(note.archived_at))
            if keep_retention
            else (None, 0, None)
        )
        cur.execute(
            "INSERT INTO notes (id, owner_id, modality, content, timestamp, keywords, tags, context, embedding, "
            "source, source_ref, created_at, updated_at, client_key, author_id, last_used_at, reinforcements, "
            "archived_at, sensitivity, sealed, search) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "to_tsvector('english', %s)) "
            "ON CONFLICT (client_key) DO NOTHING RETURNING id",
            (
                note_id,
                note.owner_id,
                note.modality,
                content,
                to_epoch(note.timestamp),
                keywords,
                tags,
                context,
                embedding,
                note.source,
                note.source_ref,
                created,
                updated,
                key,
                note.author_id,
                *retention,
                note.sensitivity,
                sealed,
                _search_text(note),
            ),
        )
        row = cur.fetchone()
        return None if row is None else int(row[0])

    def _note_fields(self, cur: Cursor, note_id: int, note: Note) -> tuple[str, Jsonb, Jsonb, str, bytes | None]:
        """(content, keywords, tags, context, sealed) as stored: in clear, or placeholders + the sealed value."""
        cipher = self._key(cur, note.owner_id)
        if cipher is None:
            return note.content, Jsonb(note.keywords), Jsonb(note.tags), note.context, None
        fields = {"content": note.content, "keywords": note.keywords, "tags": note.tags, "context": note.context}
        return "", Jsonb([]), Jsonb([]), "", seal_json(cipher, fields, note_fields_aad(note_id, note.owner_id))

    def _insert_history(
        self, cur: Cursor, note_id: int, owner_id: int, at: float, reason: str, before: Any, after: Any
    ) -> None:
        entry_id = _next_id(cur, "history")
        cipher = self._key(cur, owner_id)
        sealed = None
        if cipher is not None:
            sealed = seal_json(
                cipher, {"before": before, "after": after}, history_fields_aad(entry_id, note_id, owner_id)
            )
            before, after = {}, {}
        cur.execute(
            "INSERT INTO history (id, note_id, owner_id, at, reason, before, after, sealed) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (entry_id, note_id, owner_id, at, reason, Jsonb(before), Jsonb(after), sealed),
        )

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
            cur.execute(f"SELECT {_NOTE_COLUMNS} FROM {_NOTES_WITH_OWNER} WHERE n.id = ANY(%s)", (wanted,))
            by_id = {int(row[0]): row for row in cur.fetchall()}
            links = _links_of(cur, list(by_id))
            return [self._note(by_id[i], links.get(i, [])) for i in wanted if i in by_id]

        return self._run(_ALL, fetch, binary=True)

    def list_notes(self, owner_id: int, limit: int | None = None, offset: int = 0) -> list[Note]:
        """The owner's notes in chronological order (timestamp, then id), archived ones included."""

        def fetch(cur: Cursor) -> list[Note]:
            cur.execute(
                f"SELECT {_NOTE_COLUMNS} FROM {_NOTES_WITH_OWNER} WHERE n.owner_id = %s "
                "ORDER BY n.timestamp, n.id LIMIT %s OFFSET %s",
                (owner_id, limit, int(offset)),
            )
            rows = cur.fetchall()
            links = _links_of(cur, [int(r[0]) for r in rows])
            return [self._note(row, links.get(int(row[0]), [])) for row in rows]

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
        sensitivity = _checked_sensitivity(note.sensitivity)
        note_id = note.id
        now = time.time()

        def update(cur: Cursor) -> None:
            cur.execute(f"SELECT {_NOTE_COLUMNS} FROM {_NOTES_WITH_OWNER} WHERE n.id = %s FOR UPDATE OF n", (note_id,))
            row = cur.fetchone()
            if row is None:
                raise StoreError(f"no note with id {note_id}", "it may have been deleted")
            old = self._note(row, [])
            if old.owner_id != note.owner_id:
                raise StoreError(f"note {note_id} belongs to user {old.owner_id}", "notes never change owner")
            before, after = _changes(old, note)
            new_embedding = embedding
            if new_embedding is not None and old.embedding is not None and np.array_equal(new_embedding, old.embedding):
                new_embedding = None
            content, keywords, tags, context, sealed = self._note_fields(cur, note_id, note)
            cur.execute(
                "UPDATE notes SET modality = %s, content = %s, timestamp = %s, keywords = %s, tags = %s, "
                "context = %s, embedding = coalesce(%s, embedding), updated_at = %s, sensitivity = %s, sealed = %s, "
                "search = to_tsvector('english', %s) WHERE id = %s",
                (
                    note.modality,
                    content,
                    to_epoch(note.timestamp),
                    keywords,
                    tags,
                    context,
                    new_embedding,
                    now,
                    sensitivity,
                    sealed,
                    _search_text(note),
                    note_id,
                ),
            )
            if new_embedding is not None:
                before["embedding"], after["embedding"] = "previous", "re-encoded"
            self._insert_history(cur, note_id, old.owner_id, now, reason, before, after)
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
        """Top-k (note id, full-text rank) among the given owners' active notes only: any of the question's words.

        PostgreSQL's English text search over the stored `search` vector (content, keywords, tags, context and
        date forms, as SQLite's FTS5 index holds), GIN-indexed; archived notes are left out.
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
                "SELECT id, ts_rank_cd(search, q) AS rank FROM notes, to_tsquery('english', %s) AS q "
                f"WHERE owner_id = ANY(%s) AND {_ACTIVE} AND search @@ q ORDER BY rank DESC, id LIMIT %s",
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
            f"SELECT count(*) FROM (SELECT 1 FROM notes WHERE owner_id = ANY(%s) AND {_ACTIVE} LIMIT %s) AS pool",
            (owners, max(self.exact_pool_max, share_floor) + 1),
        )
        pool = int(cur.fetchone()[0])  # type: ignore[index]
        if pool <= self.exact_pool_max or pool < share_floor:
            return (
                f"WITH pool AS MATERIALIZED (SELECT id, embedding FROM notes WHERE owner_id = ANY(%s) AND {_ACTIVE}) "
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
            f"SELECT id, embedding <=> %s AS distance FROM notes WHERE owner_id = ANY(%s) AND {_ACTIVE} "
            "ORDER BY embedding <=> %s LIMIT %s",
            (vector, owners, vector, k),
        )

    def owner_matrix(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(note ids int64, timestamps float64 epoch s, embeddings (n, 384) float32) of active notes, chronological."""
        owners = _owner_list(owner_ids)
        if not owners:
            return np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros((0, EMBEDDING_DIM), np.float32)
        rows = self._run(
            owners,
            lambda cur: cur.execute(
                f"SELECT id, timestamp, embedding FROM notes WHERE owner_id = ANY(%s) AND {_ACTIVE} "
                "ORDER BY timestamp, id",
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

    def sensitive_note_ids(self, owner_ids: Sequence[int]) -> set[int]:
        """Ids of the given owners' notes that are marked sensitive (any category)."""
        owners = _owner_list(owner_ids)
        if not owners:
            return set()
        rows = self._run(
            owners,
            lambda cur: cur.execute(
                "SELECT id FROM notes WHERE owner_id = ANY(%s) AND sensitivity IS NOT NULL", (owners,)
            ).fetchall(),
        )
        return {int(r[0]) for r in rows}

    # ---- strength and archive ------------------------------------------------------------------------
    def retention_state(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Active (not archived) notes of these owners: (ids, last use epoch s, reinforcements), by id.

        A note never used counts from its timestamp (when it was said), not from when it was imported.
        """
        owners = _owner_list(owner_ids)
        rows = self._run(
            owners,
            lambda cur: cur.execute(
                "SELECT id, coalesce(last_used_at, timestamp), reinforcements FROM notes "
                f"WHERE owner_id = ANY(%s) AND {_ACTIVE} ORDER BY id",
                (owners,),
            ).fetchall(),
        )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        used = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        counts = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        return ids, used, counts

    def reinforce(self, note_ids: Sequence[int], at: datetime) -> None:
        """These notes were retrieved and used at `at`: one more reinforcement each, age restarts.

        Not a change of the memory itself: no history entry, and owner versions (caches) stay.
        """
        wanted = sorted({int(i) for i in note_ids})
        if not wanted:
            return
        moment = to_epoch(at)
        self._run(
            None,
            lambda cur: cur.execute(
                "UPDATE notes SET last_used_at = greatest(coalesce(last_used_at, timestamp), %s), "
                f"reinforcements = reinforcements + 1 WHERE id = ANY(%s) AND {_ACTIVE}",
                (moment, wanted),
            ),
        )

    def archive_notes(self, note_ids: Sequence[int], at: datetime) -> int:
        """Take these notes out of retrieval (knn, owner_matrix, lexical); rows, links and history stay."""
        wanted = sorted({int(i) for i in note_ids})
        if not wanted:
            return 0
        moment = to_epoch(at)

        def archive(cur: Cursor) -> int:
            cur.execute(
                f"UPDATE notes SET archived_at = %s WHERE id = ANY(%s) AND {_ACTIVE} RETURNING owner_id",
                (moment, wanted),
            )
            owners = [int(row[0]) for row in cur.fetchall()]
            for owner in sorted(set(owners)):
                self._bump(cur, owner)
            return len(owners)

        return self._run(None, archive)

    def restore_note(self, note_id: int, at: datetime) -> Note:
        """Bring an archived note back into retrieval; restoring is a use, so its age restarts at `at`."""
        moment = to_epoch(at)

        def restore(cur: Cursor) -> None:
            row = cur.execute("SELECT owner_id, archived_at FROM notes WHERE id = %s FOR UPDATE", (note_id,)).fetchone()
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            if row[1] is None:
                raise StoreError(f"note {note_id} is not archived", "only archived notes can be restored")
            cur.execute("UPDATE notes SET archived_at = NULL, last_used_at = %s WHERE id = %s", (moment, note_id))
            self._bump(cur, int(row[0]))

        self._run(None, restore)
        restored = self.get_note(note_id)
        assert restored is not None
        return restored

    def _note(self, row: Sequence[Any], links: list[Link]) -> Note:
        """A note from a `_NOTE_COLUMNS` row, its sealed fields opened with the owner's key."""
        note_id, owner_id = int(row[0]), int(row[1])
        content, keywords, tags, context = row[3], _json(row[5]), _json(row[6]), row[7]
        if row[20] is not None:
            fields = open_json(self._opened(owner_id, row[21], row[22]), row[20], note_fields_aad(note_id, owner_id))
            content, keywords, tags, context = fields["content"], fields["keywords"], fields["tags"], fields["context"]
        return Note(
            id=note_id,
            owner_id=owner_id,
            modality=row[2],
            content=content,
            timestamp=from_epoch(row[4]),
            keywords=list(keywords),
            tags=list(tags),
            context=context,
            embedding=_vector(row[8]),
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
                "SELECT h.id, h.note_id, h.owner_id, h.at, h.reason, h.before, h.after, h.sealed, k.generation, "
                "k.wrapped FROM history h LEFT JOIN user_keys k ON k.user_id = h.owner_id "
                "WHERE h.note_id = %s ORDER BY h.id",
                (note_id,),
            ).fetchall(),
        )
        entries = []
        for entry_id, note, owner, at, reason, before, after, sealed, generation, wrapped in rows:
            if sealed is not None:
                fields = open_json(
                    self._opened(int(owner), generation, wrapped), sealed, history_fields_aad(entry_id, note, owner)
                )
                before, after = fields["before"], fields["after"]
            entries.append(HistoryEntry(int(note), from_epoch(at), reason, _json(before), _json(after)))
        return entries

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
    _checked_sensitivity(note.sensitivity)
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


def _user(row: Sequence[Any]) -> User:
    return User(int(row[0]), row[1], from_epoch(row[2]))


def _group(row: Sequence[Any]) -> Group:
    return Group(int(row[0]), str(row[1])[len(_GROUP_PREFIX) :], from_epoch(row[2]))


def _next_id(cur: Cursor, table: str) -> int:
    """The id the row will take (sealing binds the ciphertext to it before the insert)."""
    row = cur.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", (table,)).fetchone()
    assert row is not None
    return int(row[0])


def _epoch_or_none(moment: datetime | None) -> float | None:
    return None if moment is None else to_epoch(moment)


def _search_text(note: Note) -> str:
    return indexed_text(note.content, note.keywords, note.tags, note.context, note.timestamp)


def _open_template(cipher: Cipher, template_id: int, user_id: int, modality: str, blob: bytes, dimension: int) -> bytes:
    if not is_sealed_vector(blob, dimension):
        return blob
    return cipher.open(blob, template_aad(template_id, user_id, modality))
