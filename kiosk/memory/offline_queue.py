"""A terminal's local SQLite file for the fleet store: notes written while the database is unreachable, and the
last users, templates, groups, memberships and public owner seen (so the gate can still verify people and
build their scoped pool offline, and a group or public note can still be queued).

Each queued note carries its idempotency key; a note leaves the queue only after the fleet database stored
it, and the database stores a key once, so a sync cut short at any point re-sends without duplicating.

With a master key (sealing at rest), a queued note's fields and the cached templates are sealed with it
(AES-GCM, bound to the queue key / template row), so the terminal's disk holds no note text or template in
clear while it is offline either; note vectors stay in clear, as in the stores.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path

import apsw
import numpy as np

from kiosk.errors import StoreError
from kiosk.memory.note import Group, Link, Note, Template, User, from_epoch, to_epoch
from kiosk.security.sealing import Cipher, MasterKey, SealingError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    queued_at REAL NOT NULL,
    note TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS cached_users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cached_templates (
    id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, modality TEXT NOT NULL, vector BLOB NOT NULL,
    model_sha256 TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS cached_groups (id INTEGER PRIMARY KEY, name TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cached_members (
    group_id INTEGER NOT NULL, user_id INTEGER NOT NULL, PRIMARY KEY (group_id, user_id)
);
CREATE TABLE IF NOT EXISTS cached_public (id INTEGER PRIMARY KEY CHECK (id = 1), owner_id INTEGER NOT NULL);
"""


def _note_aad(key: str) -> bytes:
    return f"queue:note:{key}".encode()


def _template_aad(template_id: int, user_id: int, modality: str) -> bytes:
    return f"queue:template:{template_id}:{user_id}:{modality}".encode()


class OfflineQueue:
    def __init__(self, path: Path, master_key: MasterKey | None = None) -> None:
        self.path = path
        self._cipher = Cipher(master_key.key) if master_key is not None else None
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = apsw.Connection(str(path))
            self._conn.set_busy_timeout(10_000)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(_SCHEMA)
        except apsw.Error as exc:
            raise StoreError(
                f"offline queue {path} cannot be opened ({exc})", "check the file and its directory"
            ) from exc

    def close(self) -> None:
        self._conn.close()

    # ---- pending notes -------------------------------------------------------------------------
    def put(self, key: str, note: Note) -> None:
        assert note.embedding is not None
        payload = {**note.as_dict(), "links": [[link.target_id, link.kind] for link in note.links]}
        text = json.dumps(payload)
        stored: str | bytes = text if self._cipher is None else self._cipher.seal(text.encode(), _note_aad(key))
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO pending (key, queued_at, note, embedding) VALUES (?, ?, ?, ?)",
                (key, time.time(), stored, np.asarray(note.embedding, np.float32).tobytes()),
            )

    def pending(self) -> list[tuple[str, Note]]:
        """Queued notes, oldest first, with their idempotency keys."""
        with self._lock:
            rows = list(self._conn.execute("SELECT key, note, embedding FROM pending ORDER BY seq"))
        return [(str(key), _note(json.loads(self._open_note(str(key), text)), bytes(blob))) for key, text, blob in rows]

    def _open_note(self, key: str, stored: str | bytes) -> str:
        if isinstance(stored, str):
            return stored
        return self._opener().open(bytes(stored), _note_aad(key)).decode()

    def _opener(self) -> Cipher:
        if self._cipher is None:
            raise SealingError(
                f"the offline queue {self.path} is sealed", "open the fleet store with its master key (security)"
            )
        return self._cipher

    def remove(self, key: str) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM pending WHERE key = ?", (key,))

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM pending").fetchone()[0])  # type: ignore[index]

    # ---- what the gate needs offline -----------------------------------------------------------
    def cache_users(self, users: list[User]) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM cached_users")
            for user in users:
                self._conn.execute(
                    "INSERT INTO cached_users VALUES (?, ?, ?)", (user.id, user.name, to_epoch(user.created_at))
                )

    def cached_users(self) -> list[User]:
        with self._lock:
            rows = list(self._conn.execute("SELECT id, name, created_at FROM cached_users ORDER BY id"))
        return [User(int(r[0]), str(r[1]), from_epoch(float(r[2]))) for r in rows]

    def cache_templates(self, templates: list[Template], modality: str | None) -> None:
        with self._lock, self._conn:
            if modality is None:
                self._conn.execute("DELETE FROM cached_templates")
            else:
                self._conn.execute("DELETE FROM cached_templates WHERE modality = ?", (modality,))
            for t in templates:
                vector = t.vector.astype(np.float32).tobytes()
                if self._cipher is not None:  # sealed length is 4n + 29: never a float32 array's
                    vector = self._cipher.seal(vector, _template_aad(t.id, t.user_id, t.modality))
                self._conn.execute(
                    "INSERT OR REPLACE INTO cached_templates VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        t.id,
                        t.user_id,
                        t.modality,
                        vector,
                        t.model_sha256,
                        to_epoch(t.created_at),
                    ),
                )

    def cached_templates(self, modality: str | None) -> list[Template]:
        query = "SELECT id, user_id, modality, vector, model_sha256, created_at FROM cached_templates"
        params: tuple[str, ...] = ()
        if modality is not None:
            query, params = query + " WHERE modality = ?", (modality,)
        with self._lock:
            rows = list(self._conn.execute(query + " ORDER BY user_id, id", params))
        return [
            Template(
                int(r[0]),
                int(r[1]),
                str(r[2]),
                np.frombuffer(self._open_vector(int(r[0]), int(r[1]), str(r[2]), bytes(r[3])), np.float32).copy(),
                str(r[4]),
                from_epoch(float(r[5])),
            )
            for r in rows
        ]

    def _open_vector(self, template_id: int, user_id: int, modality: str, blob: bytes) -> bytes:
        if len(blob) % 4 == 0:
            return blob
        return self._opener().open(blob, _template_aad(template_id, user_id, modality))

    # ---- scopes: groups, memberships, the public owner -------------------------------------------
    def cache_groups(self, groups: list[Group]) -> None:
        """The full list of groups: groups no longer listed (deleted) leave the cache with their memberships."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM cached_groups")
            for group in groups:
                self._upsert_group(group)
            self._conn.execute("DELETE FROM cached_members WHERE group_id NOT IN (SELECT id FROM cached_groups)")

    def cache_groups_of(self, user_id: int, groups: list[Group]) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM cached_members WHERE user_id = ?", (user_id,))
            for group in groups:
                self._upsert_group(group)
                self._conn.execute("INSERT OR IGNORE INTO cached_members VALUES (?, ?)", (group.id, user_id))

    def cache_members(self, group_id: int, users: list[User]) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM cached_members WHERE group_id = ?", (group_id,))
            for user in users:
                self._conn.execute("INSERT OR IGNORE INTO cached_members VALUES (?, ?)", (group_id, user.id))

    def _upsert_group(self, group: Group) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO cached_groups VALUES (?, ?, ?)", (group.id, group.name, to_epoch(group.created_at))
        )

    def cached_groups(self) -> list[Group]:
        with self._lock:
            rows = list(self._conn.execute("SELECT id, name, created_at FROM cached_groups ORDER BY name"))
        return [Group(int(r[0]), str(r[1]), from_epoch(float(r[2]))) for r in rows]

    def cached_groups_of(self, user_id: int) -> list[Group]:
        with self._lock:
            rows = list(
                self._conn.execute(
                    "SELECT g.id, g.name, g.created_at FROM cached_members m JOIN cached_groups g ON g.id = m.group_id "
                    "WHERE m.user_id = ? ORDER BY g.name",
                    (user_id,),
                )
            )
        return [Group(int(r[0]), str(r[1]), from_epoch(float(r[2]))) for r in rows]

    def cached_member_ids(self, group_id: int) -> list[int]:
        with self._lock:
            rows = list(self._conn.execute("SELECT user_id FROM cached_members WHERE group_id = ?", (group_id,)))
        return sorted(int(r[0]) for r in rows)

    def cache_public_owner(self, owner_id: int) -> None:
        with self._lock, self._conn:
            self._conn.execute("INSERT OR REPLACE INTO cached_public VALUES (1, ?)", (owner_id,))

    def cached_public_owner(self) -> int | None:
        with self._lock:
            row = self._conn.execute("SELECT owner_id FROM cached_public WHERE id = 1").fetchone()
        return None if row is None else int(row[0])


def _note(payload: dict[str, object], embedding: bytes) -> Note:
    def text(name: str) -> str:
        return str(payload[name])

    source_ref = payload.get("source_ref")
    sensitivity = payload.get("sensitivity")
    author_id = payload.get("author_id")
    return Note(
        id=None,
        owner_id=int(payload["owner_id"]),  # type: ignore[call-overload]
        modality=text("modality"),
        content=text("content"),
        timestamp=datetime.fromisoformat(text("timestamp")),
        keywords=list(payload["keywords"]),  # type: ignore[call-overload]
        tags=list(payload["tags"]),  # type: ignore[call-overload]
        context=text("context"),
        embedding=np.frombuffer(embedding, np.float32).copy(),
        links=[Link(int(target), str(kind)) for target, kind in payload["links"]],  # type: ignore[attr-defined]
        source=text("source"),
        source_ref=None if source_ref is None else str(source_ref),
        sensitivity=None if sensitivity is None else str(sensitivity),
        author_id=None if author_id is None else int(author_id),  # type: ignore[call-overload]
    )
