"""Sealing at rest on the fleet store: the same master key, per-owner data keys and AES-GCM as the SQLite store
(kiosk/memory/row_sealing.py), kept in the fleet database's `user_keys` / `key_check` tables.

Every terminal of a fleet must hold the same master key (`security.key_file` or the keyring entry, copied to
each terminal): it unwraps the owners' data keys, which live in the database wrapped by it. A note's sealed
fields (content, keywords, tags, context) are one sealed JSON value bound to the note's id and owner; a
history entry's before/after likewise; a template's vector is sealed in place (its length tells). Vectors
and the text-search vector stay in clear for search, as on SQLite.

Data keys are cached by (owner, generation): reads fetch the generation with the rows, so a key another
terminal rotated is never used stale.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kiosk.memory.row_sealing import _KEY_CHECK, _user_key_aad, history_aad, note_aad
from kiosk.security.sealing import Cipher, MasterKey, SealingError, new_key

NOTE_SEALED = "sealed"
"""The field name in the associated data of a note's (or history entry's) sealed value."""


class FleetSealer:
    """Per-owner data keys on PostgreSQL (cursor `cur` of the calling transaction) and the seal/open of rows."""

    def __init__(self, master: MasterKey) -> None:
        self.master = master
        self._ciphers: dict[tuple[int, int], Cipher] = {}

    def forget_cached_keys(self) -> None:
        """After a rollback: a key created in the rolled-back transaction must not be used again."""
        self._ciphers.clear()

    def check_master(self, cur: Any) -> bool:
        """True when this open wrote the key check (the first keyed open), False when the key matches."""
        row = cur.execute("SELECT sealed FROM key_check WHERE id = 1").fetchone()
        if row is None:
            cur.execute(
                "INSERT INTO key_check (id, fingerprint, sealed) VALUES (1, %s, %s) ON CONFLICT (id) DO NOTHING",
                (self.master.fingerprint, self.master.wrap(_KEY_CHECK, b"key-check")),
            )
            if cur.rowcount == 1:
                return True
            row = cur.execute("SELECT sealed FROM key_check WHERE id = 1").fetchone()
        try:
            self.master.unwrap(bytes(row[0]), b"key-check")
        except SealingError as exc:
            raise SealingError(
                "the fleet memory database was sealed with another master key",
                "copy the fleet's master key to this terminal (security.key_file or its keyring entry)",
            ) from exc
        return False

    def unwrapped(self, user_id: int, generation: int, wrapped: bytes) -> Cipher:
        cached = self._ciphers.get((user_id, generation))
        if cached is None:
            cached = Cipher(self.master.unwrap(bytes(wrapped), _user_key_aad(user_id, generation)))
            self._ciphers[(user_id, generation)] = cached
        return cached

    def cipher(self, cur: Any, user_id: int, *, create: bool = False, lock: bool = False) -> Cipher:
        """The owner's current data key (created when asked and missing); `lock` holds it against a re-key."""
        row = cur.execute(
            "SELECT generation, wrapped FROM user_keys WHERE user_id = %s" + (" FOR SHARE" if lock else ""),
            (user_id,),
        ).fetchone()
        if row is None:
            if not create:
                raise SealingError(f"owner {user_id} has no data key", "the database was altered; restore a backup")
            return self.rotate(cur, user_id)
        return self.unwrapped(user_id, int(row[0]), bytes(row[1]))

    def rotate(self, cur: Any, user_id: int) -> Cipher:
        """A new data key for the owner (generation + 1); the caller re-seals their rows in the same transaction."""
        row = cur.execute("SELECT generation FROM user_keys WHERE user_id = %s FOR UPDATE", (user_id,)).fetchone()
        key = new_key()
        if row is None:
            # The owner's first key: another terminal may be creating it at this moment; the first one wins
            # and this one uses it (replacing it would orphan what the other sealed with it).
            cur.execute(
                "INSERT INTO user_keys (user_id, generation, wrapped, created_at) VALUES (%s, 1, %s, %s) "
                "ON CONFLICT (user_id) DO NOTHING",
                (user_id, self.master.wrap(key, _user_key_aad(user_id, 1)), time.time()),
            )
            if cur.rowcount == 0:
                return self.cipher(cur, user_id, lock=True)
            self._ciphers[(user_id, 1)] = Cipher(key)
            return self._ciphers[(user_id, 1)]
        generation = int(row[0]) + 1
        cur.execute(
            "INSERT INTO user_keys (user_id, generation, wrapped, created_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation, wrapped = excluded.wrapped, "
            "created_at = excluded.created_at",
            (user_id, generation, self.master.wrap(key, _user_key_aad(user_id, generation)), time.time()),
        )
        cipher = Cipher(key)
        self._ciphers[(user_id, generation)] = cipher
        return cipher

    def rewrap_all(self, cur: Any, new_master: MasterKey) -> int:
        """Master key rotation: every data key unwrapped with the current master and wrapped with the new one."""
        rows = cur.execute("SELECT user_id, generation, wrapped FROM user_keys").fetchall()
        for user_id, generation, wrapped in rows:
            aad = _user_key_aad(int(user_id), int(generation))
            key = self.master.unwrap(bytes(wrapped), aad)
            cur.execute("UPDATE user_keys SET wrapped = %s WHERE user_id = %s", (new_master.wrap(key, aad), user_id))
        cur.execute(
            "UPDATE key_check SET fingerprint = %s, sealed = %s WHERE id = 1",
            (new_master.fingerprint, new_master.wrap(_KEY_CHECK, b"key-check")),
        )
        self.master = new_master
        self._ciphers.clear()
        return len(rows)


def seal_json(cipher: Cipher, value: Any, aad: bytes) -> bytes:
    return cipher.seal(json.dumps(value).encode("utf-8"), aad)


def open_json(cipher: Cipher, sealed: bytes, aad: bytes) -> Any:
    return json.loads(cipher.open(bytes(sealed), aad).decode("utf-8"))


def note_fields_aad(note_id: int, owner_id: int) -> bytes:
    return note_aad(note_id, owner_id, NOTE_SEALED)


def history_fields_aad(entry_id: int, note_id: int, owner_id: int) -> bytes:
    return history_aad(entry_id, note_id, owner_id, NOTE_SEALED)
