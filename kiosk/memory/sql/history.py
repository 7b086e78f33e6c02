"""The links-and-history port on SQL: links between notes of one owner, and each note's change history."""

from __future__ import annotations

import time
from typing import Any

from kiosk.errors import StoreError
from kiosk.memory.note import HistoryEntry, Link, from_epoch
from kiosk.memory.sql.base import SqlBackend
from kiosk.memory.sql.tx import ALL, Tx, insert


class LinkRecords(SqlBackend):
    def add_link(self, a: int, b: int, kind: str) -> None:
        """Link two notes of the same owner both ways (re-linking replaces the kind)."""
        now = time.time()
        self._writing(ALL, lambda tx: self._bump(tx, self._insert_link(tx, a, b, kind, now)))

    def links(self, note_id: int) -> list[Link]:
        return self._reading(ALL, lambda tx: self._links_of(tx, [note_id]).get(note_id, []))

    def history(self, note_id: int) -> list[HistoryEntry]:
        d = self.dialect

        def read(tx: Tx) -> list[HistoryEntry]:
            rows = tx.rows(
                f"SELECT h.id, h.note_id, n.owner_id, h.at, h.reason, h.before, h.after{d.history_sealing}, "
                "k.generation, k.wrapped FROM history h JOIN notes n ON n.id = h.note_id "
                "LEFT JOIN user_keys k ON k.user_id = n.owner_id WHERE h.note_id = ? ORDER BY h.id",
                (note_id,),
            )
            entries = []
            for entry_id, note, owner, at, reason, *stored, generation, wrapped in rows:
                opener = self._opener(int(owner), generation, wrapped)
                before, after = self._open_history(int(entry_id), int(note), int(owner), stored, opener)
                entries.append(HistoryEntry(int(note), from_epoch(at), reason, before, after))
            return entries

        return self._reading(ALL, read)

    def _insert_link(self, tx: Tx, a: int, b: int, kind: str, now: float) -> int:
        """Both directions of the link; returns the notes' owner."""
        if a == b:
            raise StoreError(f"note {a} cannot link to itself", "link two different notes")
        rows = tx.rows(f"SELECT id, owner_id FROM notes WHERE id IN (?, ?){self.dialect.lock('KEY SHARE')}", (a, b))
        owners = {int(row[0]): int(row[1]) for row in rows}
        missing = [n for n in (a, b) if n not in owners]
        if missing:
            raise StoreError(f"no note with id {missing[0]}", "link notes that exist")
        if owners[a] != owners[b]:
            raise StoreError(f"notes {a} and {b} belong to different users", "links never cross owners")
        low, high = sorted((a, b))  # one order for every writer: concurrent linkers cannot deadlock
        for source, target in ((low, high), (high, low)):
            values = {"source_id": source, "target_id": target, **self._owner_column(owners[a])}
            statement, params = insert("links", {**values, "kind": kind, "created_at": now}, self.dialect)
            tx.run(statement + " ON CONFLICT (source_id, target_id) DO UPDATE SET kind = excluded.kind", params)
        return owners[a]

    def _insert_history(
        self, tx: Tx, note_id: int, owner_id: int, at: float, reason: str, before: Any, after: Any
    ) -> None:
        entry_id = self._next_id(tx, "history")
        sealed = self._seal_history(self._write_key(tx, owner_id), entry_id, note_id, owner_id, before, after)
        values = {"id": entry_id, "note_id": note_id, **self._owner_column(owner_id), "at": at, "reason": reason}
        tx.run(*insert("history", {**values, **sealed}, self.dialect))

    def _owner_column(self, owner_id: int) -> dict[str, int]:
        return {"owner_id": owner_id} if self.dialect.owner_columns else {}
