"""Sealing at rest, common to both stores: which rows are sealed, bound to what, under whose key.

Sealed: a note's content, keywords, tags and context, a history entry's before and after, a template's vector.
Each owner's rows are sealed with that owner's data key (AES-GCM); the data key is stored wrapped by the master
key in `user_keys`, and `key_check` proves the master key is the one the database was sealed with. Vectors and
the lexical index stay in clear for search. How a store lays out a sealed note or history entry in its columns
is its own (kiosk/memory/sqlite_sealing.py, kiosk/memory/pg_sealing.py); a template is sealed in place in
both (its length tells), so a database sealed half-way by an interrupted upgrade still reads and the upgrade
resumes where it stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from kiosk.memory.sql.tx import Dialect, Tx
from kiosk.security.sealing import OVERHEAD, Cipher, MasterKey, SealingError, new_key

log = logging.getLogger(__name__)
R = TypeVar("R")
T = TypeVar("T")

_KEY_CHECK = b"bio-memory-kiosk key check"

Opener = Callable[[], Cipher]
"""Gives the owner's cipher when a sealed value is met (a value in clear needs none)."""


def note_aad(note_id: int, owner_id: int, field: str) -> bytes:
    return f"note:{note_id}:{owner_id}:{field}".encode()


def history_aad(entry_id: int, note_id: int, owner_id: int, field: str) -> bytes:
    return f"history:{entry_id}:{note_id}:{owner_id}:{field}".encode()


def template_aad(template_id: int, user_id: int, modality: str) -> bytes:
    return f"template:{template_id}:{user_id}:{modality}".encode()


def _user_key_aad(user_id: int, generation: int) -> bytes:
    return f"user-key:{user_id}:{generation}".encode()


def is_sealed_vector(blob: bytes, dimension: int) -> bool:
    return len(blob) == dimension * 4 + OVERHEAD


def open_template(opener: Opener, template_id: int, user_id: int, modality: str, blob: bytes, dimension: int) -> bytes:
    """A template vector's bytes, opened when sealed."""
    if not is_sealed_vector(blob, dimension):
        return blob
    return opener().open(blob, template_aad(template_id, user_id, modality))


def readable(rows: Iterable[R], read: Callable[[R], T], kind: str) -> Iterator[T]:
    """Each row read by `read`, except rows whose sealed value fails authentication: those are quarantined
    (skipped and logged; `kiosk doctor` names them with their repair), so one altered row never takes the
    other rows, or other people, down with it."""
    for row in rows:
        try:
            yield read(row)
        except SealingError as exc:
            log.warning("quarantined a damaged sealed %s (%s): run `kiosk doctor`", kind, exc.message)


class KeyRing:
    """Per-owner data keys in `user_keys` (read in the calling transaction) and the master key check.

    Unwrapped keys are cached by (owner, generation): rows carry the generation they were sealed under, so a
    key that another connection rotated is never used stale.
    """

    def __init__(self, master: MasterKey, dialect: Dialect) -> None:
        self.master = master
        self._dialect = dialect
        self._ciphers: dict[tuple[int, int], Cipher] = {}

    def forget_cached_keys(self) -> None:
        """After a rollback: a key created in the rolled-back transaction must not be used again."""
        self._ciphers.clear()

    def check_master(self, tx: Tx, wrong_key: tuple[str, str]) -> bool:
        """True when this open wrote the key check (the first keyed open), False when the key matches; a
        SealingError(`wrong_key`) when the database was sealed with another master key."""
        row = tx.one("SELECT sealed FROM key_check WHERE id = 1")
        if row is None:
            written = tx.run(
                "INSERT INTO key_check (id, fingerprint, sealed) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING",
                (self.master.fingerprint, self.master.wrap(_KEY_CHECK, b"key-check")),
            )
            if written == 1:
                return True
            row = tx.one("SELECT sealed FROM key_check WHERE id = 1")  # another connection wrote it meanwhile
        assert row is not None
        try:
            self.master.unwrap(bytes(row[0]), b"key-check")
        except SealingError as exc:
            raise SealingError(*wrong_key) from exc
        return False

    def unwrapped(self, owner_id: int, generation: int, wrapped: bytes) -> Cipher:
        cached = self._ciphers.get((owner_id, generation))
        if cached is None:
            cached = Cipher(self.master.unwrap(bytes(wrapped), _user_key_aad(owner_id, generation)))
            self._ciphers[(owner_id, generation)] = cached
        return cached

    def opens(self, owner_id: int, generation: int, wrapped: bytes) -> bool:
        """The stored data key unwraps under the master key (checked afresh, never from the cache)."""
        try:
            self.master.unwrap(bytes(wrapped), _user_key_aad(owner_id, generation))
        except SealingError:
            return False
        return True

    def cipher(self, tx: Tx, owner_id: int, *, create: bool = False, lock: bool = False) -> Cipher:
        """The owner's current data key (created when asked and missing); `lock` holds it against a re-key."""
        row = tx.one(
            "SELECT generation, wrapped FROM user_keys WHERE user_id = ?"
            + (self._dialect.lock("SHARE") if lock else ""),
            (owner_id,),
        )
        if row is None:
            if not create:
                raise SealingError(f"owner {owner_id} has no data key", "the database was altered; restore a backup")
            return self.rotate(tx, owner_id)
        return self.unwrapped(owner_id, int(row[0]), bytes(row[1]))

    def rotate(self, tx: Tx, owner_id: int) -> Cipher:
        """A new data key for the owner (generation + 1); the caller re-seals their rows in the same transaction."""
        row = tx.one("SELECT generation FROM user_keys WHERE user_id = ?" + self._dialect.lock("UPDATE"), (owner_id,))
        key = new_key()
        if row is None:
            # The owner's first key: another connection may be creating it at this moment; the first one wins and
            # this one uses it (replacing it would orphan what the other sealed with it).
            written = tx.run(
                "INSERT INTO user_keys (user_id, generation, wrapped, created_at) VALUES (?, 1, ?, ?) "
                "ON CONFLICT (user_id) DO NOTHING",
                (owner_id, self.master.wrap(key, _user_key_aad(owner_id, 1)), time.time()),
            )
            if written == 0:
                return self.cipher(tx, owner_id, lock=True)
            self._ciphers[(owner_id, 1)] = Cipher(key)
            return self._ciphers[(owner_id, 1)]
        generation = int(row[0]) + 1
        tx.run(
            "INSERT INTO user_keys (user_id, generation, wrapped, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation, wrapped = excluded.wrapped, "
            "created_at = excluded.created_at",
            (owner_id, generation, self.master.wrap(key, _user_key_aad(owner_id, generation)), time.time()),
        )
        self._ciphers[(owner_id, generation)] = Cipher(key)
        return self._ciphers[(owner_id, generation)]

    def generation(self, tx: Tx, owner_id: int) -> int:
        row = tx.one("SELECT generation FROM user_keys WHERE user_id = ?", (owner_id,))
        return int(row[0]) if row else 0

    def rewrap_all(self, tx: Tx, new_master: MasterKey) -> int:
        """Master key rotation: every data key unwrapped with the current master and wrapped with the new one."""
        rows = tx.rows("SELECT user_id, generation, wrapped FROM user_keys")
        for user_id, generation, wrapped in rows:
            aad = _user_key_aad(int(user_id), int(generation))
            key = self.master.unwrap(bytes(wrapped), aad)
            tx.run("UPDATE user_keys SET wrapped = ? WHERE user_id = ?", (new_master.wrap(key, aad), int(user_id)))
        tx.run(
            "UPDATE key_check SET fingerprint = ?, sealed = ? WHERE id = 1",
            (new_master.fingerprint, new_master.wrap(_KEY_CHECK, b"key-check")),
        )
        self.master = new_master
        self._ciphers.clear()
        return len(rows)
