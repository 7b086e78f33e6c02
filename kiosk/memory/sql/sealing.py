"""Sealing at rest on SQL: the first keyed open seals what is in clear, re-keying an owner (renewability),
rotating the master key. The layout of a sealed row is the adapter's (`_seal_note`, `_open_note`, ...); the
loops that open rows with one key and seal them with another are written here once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from kiosk.errors import StoreError
from kiosk.memory.row_sealing import KeyRing, open_template, template_aad
from kiosk.memory.sql.base import SqlBackend
from kiosk.memory.sql.tx import ALL, Tx, update
from kiosk.security.sealing import Cipher, MasterKey, SealingError

log = logging.getLogger(__name__)

KeyOf = Callable[[int], Cipher]
"""Owner id -> the cipher to use for that owner's rows."""


@dataclass(frozen=True)
class DamagedRow:
    """A sealed row that fails authentication: altered, moved, or sealed under a key the database lost."""

    kind: Literal["data key", "template", "note", "history"]
    row_id: int
    owner_id: int
    note_id: int | None = None
    """The note a history entry belongs to."""


class SealingAtRest(SqlBackend):
    def seal_plaintext_rows(self) -> int:
        """Encrypt in place every value still stored in clear; returns how many rows were sealed. Opening a clear
        database with a key already does this once; sealed rows are left alone."""
        keys = self._keys
        if keys is None:
            return 0
        return self._sealed_in_place(self._writing(ALL, lambda tx: self._seal_all_in_place(tx, keys)))

    def rekey_user(self, user_id: int) -> int:
        """A new data key for the owner; every sealed row of theirs is re-sealed with it (renewability).

        Returns the new key generation (0 when the store is not encrypted). Nothing is lost: each value is
        opened with the old key and sealed with the new one in one transaction.
        """

        def rekey(tx: Tx) -> int:
            generation = self._rekey(tx, user_id)
            self._bump(tx, user_id)
            return generation

        generation = self._writing([user_id], rekey)
        self._reclaim(full=False)
        return generation

    def key_generation(self, user_id: int) -> int:
        """The owner's data-key generation (rises with every re-key; 0 when not encrypted)."""
        keys = self._keys
        if keys is None:
            return 0
        return self._reading([user_id], lambda tx: keys.generation(tx, user_id))

    def rotate_master_key(self, new_master: MasterKey) -> int:
        """Re-wrap every owner's data key under a new master key; returns how many keys were re-wrapped."""
        keys = self._keys
        if keys is None:
            raise StoreError("this memory database is not encrypted", "open it with its master key first")
        count = self._writing(ALL, lambda tx: keys.rewrap_all(tx, new_master))
        self._reclaim(full=False)
        return count

    def damaged_sealed_rows(self) -> list[DamagedRow]:
        """Every sealed row whose value fails authentication (a full scan, for `kiosk doctor`). Reads skip
        these rows (quarantine); deleting them never needs to open them. A damaged data key is reported once,
        not with each row sealed under it."""
        keys = self._keys
        if keys is None:
            return []
        return self._reading(ALL, lambda tx: self._scan_sealed_rows(tx, keys))

    def _scan_sealed_rows(self, tx: Tx, keys: KeyRing) -> list[DamagedRow]:
        d = self.dialect
        damaged: list[DamagedRow] = []
        lost: set[int] = set()
        for owner, generation, wrapped in tx.rows("SELECT user_id, generation, wrapped FROM user_keys ORDER BY 1"):
            if not keys.opens(int(owner), int(generation), bytes(wrapped)):
                lost.add(int(owner))
                damaged.append(DamagedRow("data key", int(owner), int(owner)))
        with_key = "LEFT JOIN user_keys k ON k.user_id = {}"

        def check(kind: Any, row_id: int, owner: int, note_id: int | None, open_row: Callable[[], object]) -> None:
            if owner in lost:
                return
            try:
                open_row()
            except SealingError:
                damaged.append(DamagedRow(kind, row_id, owner, note_id))

        templates = tx.rows(
            "SELECT t.id, t.user_id, t.modality, t.vector, t.dimension, k.generation, k.wrapped FROM templates t "
            + with_key.format("t.user_id")
            + " ORDER BY t.id"
        )
        for template_id, owner, modality, blob, dimension, generation, wrapped in templates:
            opener = self._opener(int(owner), generation, wrapped)
            check(
                "template",
                int(template_id),
                int(owner),
                None,
                partial(open_template, opener, int(template_id), int(owner), modality, bytes(blob), int(dimension)),
            )
        notes = tx.rows(
            f"SELECT n.id, n.owner_id, n.content, n.keywords, n.tags, n.context{d.note_sealing}, k.generation, "
            f"k.wrapped FROM notes n {with_key.format('n.owner_id')} ORDER BY n.id"
        )
        for note_id, owner, *stored, generation, wrapped in notes:
            opener = self._opener(int(owner), generation, wrapped)
            check("note", int(note_id), int(owner), None, partial(self._open_note, note_id, owner, stored, opener))
        entries = tx.rows(
            f"SELECT h.id, h.note_id, n.owner_id, h.before, h.after{d.history_sealing}, k.generation, k.wrapped "
            f"FROM history h JOIN notes n ON n.id = h.note_id {with_key.format('n.owner_id')} ORDER BY h.id"
        )
        for entry_id, note_id, owner, *stored, generation, wrapped in entries:
            opener = self._opener(int(owner), generation, wrapped)
            read = partial(self._open_history, entry_id, note_id, owner, stored, opener)
            check("history", int(entry_id), int(owner), int(note_id), read)
        return damaged

    def _open_sealing(self) -> None:
        """At open: a database holding the key check needs the key; the first keyed open seals what is in clear.

        One transaction: once the key check exists no row is written in clear (nothing can add one without the
        key), so later opens skip the scan for clear rows.
        """
        keys = self._keys
        if keys is None:
            if self._reading(ALL, self._holds_key_check):
                raise StoreError(*self.locked_out)
            return
        self._sealed_in_place(
            self._writing(
                ALL, lambda tx: self._seal_all_in_place(tx, keys) if keys.check_master(tx, self.wrong_key) else 0
            )
        )

    def _holds_key_check(self, tx: Tx) -> bool:
        """The database was sealed by a keyed open."""
        return tx.one("SELECT 1 FROM key_check") is not None

    def _sealed_in_place(self, count: int) -> int:
        if count:
            log.info("sealed %d memory rows that were stored in clear", count)
            self._reclaim(full=True)
        return count

    def _seal_all_in_place(self, tx: Tx, keys: KeyRing) -> int:
        def key(owner_id: int) -> Cipher:
            return keys.cipher(tx, owner_id, create=True)

        d = self.dialect
        notes = self._reseal_notes(tx, d.clear_note, (), key, key, recheck=d.clear_note)
        history = self._reseal_history(tx, d.clear_history, (), key, key, recheck=d.clear_history)
        templates = tx.rows("SELECT id, user_id, modality, vector FROM templates WHERE length(vector) = dimension * 4")
        for template_id, user_id, modality, vector in templates:
            blob = key(int(user_id)).seal(bytes(vector), template_aad(int(template_id), int(user_id), modality))
            tx.run(  # re-checked: another connection may have sealed it meanwhile
                "UPDATE templates SET vector = ? WHERE id = ? AND length(vector) = dimension * 4", (blob, template_id)
            )
        return notes + history + len(templates)

    def _rekey(self, tx: Tx, owner_id: int) -> int:
        keys = self._keys
        if keys is None:
            return 0
        tx.one(f"SELECT 1 FROM user_keys WHERE user_id = ?{self.dialect.lock('UPDATE')}", (owner_id,))  # one at a time
        old = keys.cipher(tx, owner_id, create=True)
        templates = [
            (int(t), modality, open_template(lambda: old, int(t), owner_id, modality, bytes(blob), int(dimension)))
            for t, modality, blob, dimension in tx.rows(
                "SELECT id, modality, vector, dimension FROM templates WHERE user_id = ?", (owner_id,)
            )
        ]
        new = keys.rotate(tx, owner_id)
        self._reseal_notes(tx, "n.owner_id = ?", (owner_id,), lambda _: old, lambda _: new)
        self._reseal_history(tx, "n.owner_id = ?", (owner_id,), lambda _: old, lambda _: new)
        for template_id, modality, vector in templates:
            blob = new.seal(vector, template_aad(template_id, owner_id, modality))
            tx.run("UPDATE templates SET vector = ? WHERE id = ?", (blob, template_id))
        return keys.generation(tx, owner_id)

    def _reseal_notes(
        self, tx: Tx, where: str, params: tuple[int, ...], old: KeyOf, new: KeyOf, recheck: str = ""
    ) -> int:
        """Open the text of the notes `where` selects with `old`, seal it with `new` (each row `recheck`ed at the
        update, when given); returns how many there were."""
        rows = tx.rows(
            f"SELECT n.id, n.owner_id, n.content, n.keywords, n.tags, n.context{self.dialect.note_sealing} "
            f"FROM notes n WHERE {where}",
            params,
        )
        match = "n.id = ?" + (f" AND ({recheck})" if recheck else "")
        for note_id, owner_id, *stored in rows:
            text = self._open_note(note_id, owner_id, stored, partial(old, owner_id))
            values = self._seal_note(new(owner_id), note_id, owner_id, text)
            tx.run(*update("notes AS n", values, self.dialect, match, (note_id,)))
        return len(rows)

    def _reseal_history(
        self, tx: Tx, where: str, params: tuple[int, ...], old: KeyOf, new: KeyOf, recheck: str = ""
    ) -> int:
        """Open the history entries `where` selects (on `history h JOIN notes n`) with `old`, seal them with
        `new`; returns how many there were."""
        rows = tx.rows(
            f"SELECT h.id, h.note_id, n.owner_id, h.before, h.after{self.dialect.history_sealing} "
            f"FROM history h JOIN notes n ON n.id = h.note_id WHERE {where}",
            params,
        )
        match = "h.id = ?" + (f" AND ({recheck})" if recheck else "")
        for entry_id, note_id, owner_id, *stored in rows:
            before, after = self._open_history(entry_id, note_id, owner_id, stored, partial(old, owner_id))
            values = self._seal_history(new(owner_id), entry_id, note_id, owner_id, before, after)
            tx.run(*update("history AS h", values, self.dialect, match, (entry_id,)))
        return len(rows)
