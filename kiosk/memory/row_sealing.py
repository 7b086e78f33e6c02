"""Which columns of the memory database are sealed, under which key, bound to which row.

Sealed: notes.content/keywords/tags/context, history.before/after, templates.vector. Each user's rows are
sealed with that user's data key; the data key is stored wrapped by the master key in `user_keys`.
A sealed text column holds a BLOB and a clear one TEXT (templates: the length tells), so a database
sealed half-way by an interrupted upgrade still reads, and the upgrade resumes where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import apsw

from kiosk.security.sealing import OVERHEAD, Cipher, MasterKey, SealingError, new_key

NOTE_SEALED_FIELDS = ("content", "keywords", "tags", "context")
HISTORY_SEALED_FIELDS = ("before", "after")
_KEY_CHECK = b"bio-memory-kiosk key check"


def note_aad(note_id: int, owner_id: int, field: str) -> bytes:
    return f"note:{note_id}:{owner_id}:{field}".encode()


def history_aad(entry_id: int, note_id: int, owner_id: int, field: str) -> bytes:
    return f"history:{entry_id}:{note_id}:{owner_id}:{field}".encode()


def template_aad(template_id: int, user_id: int, modality: str) -> bytes:
    return f"template:{template_id}:{user_id}:{modality}".encode()


def _user_key_aad(user_id: int, generation: int) -> bytes:
    return f"user-key:{user_id}:{generation}".encode()


class RowSealer:
    """Per-user data keys (unwrapped on first use, cached) and the seal/open of column values."""

    def __init__(self, master: MasterKey) -> None:
        self.master = master
        self._ciphers: dict[int, tuple[int, Cipher]] = {}

    def forget_cached_keys(self) -> None:
        """After a rollback: a key created in the rolled-back transaction must not be used again."""
        self._ciphers.clear()

    # ---- the master key check ------------------------------------------------------------------
    def check_master(self, conn: apsw.Connection, path: object) -> bool:
        """True when this is the first keyed open (the check was just written), False when the key matches."""
        row = conn.execute("SELECT sealed FROM key_check WHERE id = 1").fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO key_check (id, fingerprint, sealed) VALUES (1, ?, ?)",
                (self.master.fingerprint, self.master.wrap(_KEY_CHECK, b"key-check")),
            )
            return True
        try:
            self.master.unwrap(bytes(row[0]), b"key-check")
        except SealingError as exc:
            raise SealingError(
                f"memory database {path} was sealed with another master key",
                "use the key file or keyring entry this database was created with (see security.key_file)",
            ) from exc
        return False

    # ---- data keys -----------------------------------------------------------------------------
    def cipher(self, conn: apsw.Connection, user_id: int, *, create: bool = False) -> Cipher:
        cached = self._ciphers.get(user_id)
        if cached is not None:
            return cached[1]
        row = conn.execute("SELECT generation, wrapped FROM user_keys WHERE user_id = ?", (user_id,)).fetchone()
        if row is None:
            if not create:
                raise SealingError(f"user {user_id} has no data key", "the database was altered; restore a backup")
            return self.rotate(conn, user_id)
        generation = int(row[0])
        cipher = Cipher(self.master.unwrap(bytes(row[1]), _user_key_aad(user_id, generation)))
        self._ciphers[user_id] = (generation, cipher)
        return cipher

    def rotate(self, conn: apsw.Connection, user_id: int) -> Cipher:
        """A new data key for the user (generation + 1); the caller re-seals their rows in the same transaction."""
        row = conn.execute("SELECT generation FROM user_keys WHERE user_id = ?", (user_id,)).fetchone()
        generation = int(row[0]) + 1 if row else 1
        key = new_key()
        conn.execute(
            "INSERT INTO user_keys (user_id, generation, wrapped, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(user_id) DO UPDATE SET generation = excluded.generation, wrapped = excluded.wrapped, "
            "created_at = excluded.created_at",
            (user_id, generation, self.master.wrap(key, _user_key_aad(user_id, generation)), time.time()),
        )
        cipher = Cipher(key)
        self._ciphers[user_id] = (generation, cipher)
        return cipher

    def generation(self, conn: apsw.Connection, user_id: int) -> int:
        row = conn.execute("SELECT generation FROM user_keys WHERE user_id = ?", (user_id,)).fetchone()
        return int(row[0]) if row else 0

    def rewrap_all(self, conn: apsw.Connection, new_master: MasterKey) -> int:
        """Master key rotation: unwrap every data key with the current master and wrap it with the new one."""
        rows = [tuple(r) for r in conn.execute("SELECT user_id, generation, wrapped FROM user_keys")]
        for user_id, generation, wrapped in rows:
            aad = _user_key_aad(int(user_id), int(generation))
            key = self.master.unwrap(bytes(wrapped), aad)
            conn.execute(
                "UPDATE user_keys SET wrapped = ? WHERE user_id = ?", (new_master.wrap(key, aad), int(user_id))
            )
        conn.execute(
            "UPDATE key_check SET fingerprint = ?, sealed = ? WHERE id = 1",
            (new_master.fingerprint, new_master.wrap(_KEY_CHECK, b"key-check")),
        )
        self.master = new_master
        self._ciphers.clear()
        return len(rows)


def seal_text(cipher: Cipher | None, value: str, aad: bytes) -> str | bytes:
    return value if cipher is None else cipher.seal(value.encode("utf-8"), aad)


def open_text(cipher_for: Callable[[], Cipher] | None, value: str | bytes, aad: bytes) -> str:
    """`value` itself when stored in clear; else opened with the cipher `cipher_for()` returns."""
    if isinstance(value, str):
        return value
    if cipher_for is None:
        raise SealingError("this memory database is encrypted", "open it with its master key (security settings)")
    return cipher_for().open(bytes(value), aad).decode("utf-8")


def is_sealed_vector(blob: bytes, dimension: int) -> bool:
    return len(blob) == dimension * 4 + OVERHEAD
