"""The notes port on SQL: add, read, list, count, update (recorded in history), delete, and the strength and
archive state that forgetting works on (kiosk/memory/forgetting.py holds the formula)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np

from kiosk.errors import DuplicateNote, StoreError
from kiosk.memory.checks import (
    checked_sensitivity,
    new_embedding,
    note_changes,
    validate_new_note,
    validate_update,
)
from kiosk.memory.note import Note, to_epoch
from kiosk.memory.records import NOTES_WITH_OWNER, NoteText, retention_arrays
from kiosk.memory.row_sealing import readable
from kiosk.memory.sql.history import LinkRecords
from kiosk.memory.sql.tx import ALL, Tx, insert, owner_list, update

NEW_NOTE_RETENTION: tuple[float | None, int, float | None] = (None, 0, None)
"""(last use, reinforcements, archive time) of a note stored for the first time."""
MARKED_BY_HAND = "sensitivity marked by "
"""The history reason of a person's mark (`mark_sensitivity`), followed by who: 'owner' or 'admin'."""


class NoteRecords(LinkRecords):
    def add_note(self, note: Note) -> Note:
        """Store a new note with its vector and links in one transaction; returns it with id and times."""
        return self._add_note(note, None)

    def get_note(self, note_id: int) -> Note | None:
        notes = self.get_notes([note_id])
        return notes[0] if notes else None

    def get_notes(self, ids: Sequence[int]) -> list[Note]:
        """Notes with these ids, in the order asked; missing (or, in a gate scope, foreign) ids are skipped."""
        if not ids:
            return []
        wanted = [int(i) for i in ids]
        d = self.dialect

        def fetch(tx: Tx) -> list[Note]:
            rows = tx.rows(
                f"SELECT {self._note_columns} FROM {NOTES_WITH_OWNER} WHERE {d.ids('n.id')}", (d.bind_ids(wanted),)
            )
            by_id = {int(row[0]): row for row in rows}
            links = self._links_of(tx, list(by_id))
            found = [by_id[i] for i in wanted if i in by_id]
            return list(readable(found, lambda row: self._note(row, links.get(int(row[0]), [])), "note"))

        return self._reading(ALL, fetch)

    def list_notes(self, owner_id: int, limit: int | None = None, offset: int = 0) -> list[Note]:
        """The owner's notes in chronological order (timestamp, then id), archived ones included."""
        bounds = (self.dialect.no_limit if limit is None else int(limit), int(offset))

        def fetch(tx: Tx) -> list[Note]:
            rows = tx.rows(
                f"SELECT {self._note_columns} FROM {NOTES_WITH_OWNER} WHERE n.owner_id = ? "
                "ORDER BY n.timestamp, n.id LIMIT ? OFFSET ?",
                (owner_id, *bounds),
            )
            links = self._links_of(tx, [int(r[0]) for r in rows])
            return list(readable(rows, lambda row: self._note(row, links.get(int(row[0]), [])), "note"))

        return self._reading([owner_id], fetch)

    def count_notes(self, owner_id: int | None = None) -> int:
        if owner_id is None:
            row = self._reading(ALL, lambda tx: tx.one("SELECT count(*) FROM notes"))
        else:
            row = self._reading(
                [owner_id], lambda tx: tx.one("SELECT count(*) FROM notes WHERE owner_id = ?", (owner_id,))
            )
        assert row is not None
        return int(row[0])

    def source_refs(self, owner_id: int) -> set[str]:
        """Source references already stored for the owner (resumable imports skip these)."""
        rows = self._reading(
            [owner_id],
            lambda tx: tx.rows(
                "SELECT source_ref FROM notes WHERE owner_id = ? AND source_ref IS NOT NULL", (owner_id,)
            ),
        )
        return {r[0] for r in rows}

    def update_note(self, note: Note, reason: str) -> Note:
        """Rewrite a stored note's fields (and vector if given); the change is recorded in its history."""
        embedding, sensitivity = validate_update(note)
        note_id = int(note.id or 0)
        now = time.time()
        d = self.dialect

        def rewrite(tx: Tx) -> None:
            row = tx.one(
                f"SELECT {self._note_columns} FROM {NOTES_WITH_OWNER} WHERE n.id = ?{d.lock('UPDATE', 'n')}", (note_id,)
            )
            if row is None:
                raise StoreError(f"no note with id {note_id}", "it may have been deleted")
            old = self._note(row, [])
            if old.owner_id != note.owner_id:
                raise StoreError(f"note {note_id} belongs to user {old.owner_id}", "notes never change owner")
            kept = sensitivity
            if sensitivity != old.sensitivity and self._marked_by_hand(tx, note_id):
                kept = old.sensitivity  # a person's mark outranks any rewrite (an evolution step read before it)
            written = note if kept == sensitivity else replace(note, sensitivity=kept)
            before, after = note_changes(old, written)
            changed = new_embedding(embedding, old)
            values = {
                "modality": note.modality,
                **self._seal_note(self._write_key(tx, old.owner_id), note_id, old.owner_id, NoteText.of(note)),
                "timestamp": to_epoch(note.timestamp),
                "embedding": None if changed is None else d.bind_vector(changed),
                "updated_at": now,
                "sensitivity": kept,
                **self._index_columns(written),
            }
            tx.run(*update("notes", values, d, "id = ?", (note_id,), {"embedding": "coalesce(?, embedding)"}))
            self._reindex_note(tx, written, archived=old.archived, embedding=changed)
            if changed is not None:
                before["embedding"], after["embedding"] = "previous", "re-encoded"
            self._insert_history(tx, note_id, old.owner_id, now, reason, before, after)
            self._bump(tx, old.owner_id)

        self._writing(ALL, rewrite)  # in a gate scope, a foreign note looks missing
        return self._stored(note_id)

    def delete_note(self, note_id: int) -> None:
        """Delete the note, its vector, its lexical entry, its history and every link from or to it; its index
        data is erased, not just dropped."""

        def delete(tx: Tx) -> None:
            row = tx.one("SELECT owner_id FROM notes WHERE id = ?", (note_id,))
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            self._unindex(tx, [note_id], erase=True)
            tx.run("DELETE FROM notes WHERE id = ?", (note_id,))
            self._bump(tx, int(row[0]))

        self._writing(ALL, delete)
        self._reclaim(full=False)

    # ---- strength and archive ----------------------------------------------------------------------
    def retention_state(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Active (not archived) notes of these owners: (ids, last use epoch s, reinforcements), by id.

        A note never used counts from its timestamp (when it was said), not from when it was imported.
        """
        owners = owner_list(owner_ids)
        d = self.dialect
        rows = self._reading(
            owners,
            lambda tx: tx.rows(
                "SELECT id, coalesce(last_used_at, timestamp), reinforcements FROM notes "
                f"WHERE {d.ids('owner_id')} AND archived_at IS NULL ORDER BY id",
                (d.bind_ids(owners),),
            ),
        )
        return retention_arrays(rows)

    def reinforce(self, note_ids: Sequence[int], at: datetime) -> None:
        """These notes were retrieved and used at `at`: one more reinforcement each, age restarts.

        Not a change of the memory itself: no history entry, and owner versions (caches) stay.
        """
        wanted = owner_list(note_ids)
        if not wanted:
            return
        d = self.dialect
        self._writing(
            ALL,
            lambda tx: tx.run(
                f"UPDATE notes SET last_used_at = {d.greatest}(coalesce(last_used_at, timestamp), ?), "
                f"reinforcements = reinforcements + 1 WHERE {d.ids('id')} AND archived_at IS NULL",
                (to_epoch(at), d.bind_ids(wanted)),
            ),
        )

    def archive_notes(self, note_ids: Sequence[int], at: datetime) -> int:
        """Take these notes out of retrieval (knn, owner_matrix, lexical); rows, links and history stay."""
        wanted = owner_list(note_ids)
        if not wanted:
            return 0
        d = self.dialect

        def archive(tx: Tx) -> int:
            rows = tx.rows(
                f"UPDATE notes SET archived_at = ? WHERE {d.ids('id')} AND archived_at IS NULL RETURNING id, owner_id",
                (to_epoch(at), d.bind_ids(wanted)),
            )
            self._unindex(tx, [int(row[0]) for row in rows], erase=False)
            for owner in sorted({int(row[1]) for row in rows}):
                self._bump(tx, owner)
            return len(rows)

        return self._writing(ALL, archive)

    def restore_note(self, note_id: int, at: datetime) -> Note:
        """Bring an archived note back into retrieval; restoring is a use, so its age restarts at `at`."""

        def restore(tx: Tx) -> None:
            row = tx.one(
                f"SELECT n.owner_id, n.archived_at FROM notes n WHERE n.id = ?{self.dialect.lock('UPDATE', 'n')}",
                (note_id,),
            )
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            if row[1] is None:
                raise StoreError(f"note {note_id} is not archived", "only archived notes can be restored")
            tx.run("UPDATE notes SET archived_at = NULL, last_used_at = ? WHERE id = ?", (to_epoch(at), note_id))
            self._restore_index(tx, note_id)
            self._bump(tx, int(row[0]))

        self._writing(ALL, restore)
        return self._stored(note_id)

    def mark_sensitivity(self, note_id: int, sensitivity: str | None, by: str) -> Note:
        """A person sets the note's sensitive category (None: not sensitive), recorded in its history as theirs;
        from then on no rewrite through `update_note` changes it. In a sealed store a note marked sensitive
        leaves the lexical index (its stems are readable at rest; they are erased from the files), and one
        unmarked re-enters it; the owner's cached results are invalidated either way."""
        checked = checked_sensitivity(sensitivity)
        now = time.time()
        d = self.dialect

        def mark(tx: Tx) -> bool:
            row = tx.one(
                f"SELECT {self._note_columns} FROM {NOTES_WITH_OWNER} WHERE n.id = ?{d.lock('UPDATE', 'n')}", (note_id,)
            )
            if row is None:
                raise StoreError(f"no note with id {note_id}", "list the notes to see their ids")
            old = self._note(row, [])
            marked = replace(old, sensitivity=checked)
            values = {"sensitivity": checked, "updated_at": now, **self._index_columns(marked)}
            tx.run(*update("notes", values, d, "id = ?", (note_id,)))
            self._reindex_note(tx, marked, archived=old.archived, embedding=None)
            before, after = {"sensitivity": old.sensitivity}, {"sensitivity": checked}
            self._insert_history(tx, note_id, old.owner_id, now, MARKED_BY_HAND + by, before, after)
            self._bump(tx, old.owner_id)
            return old.sensitivity is None and checked is not None

        if self._writing(ALL, mark) and self._keys is not None:
            self._reclaim(full=False)  # the stems it had in the lexical index leave the database files
        return self._stored(note_id)

    @staticmethod
    def _marked_by_hand(tx: Tx, note_id: int) -> bool:
        return (
            tx.one("SELECT 1 FROM history WHERE note_id = ? AND reason LIKE ?", (note_id, MARKED_BY_HAND + "%"))
            is not None
        )

    def sensitive_note_ids(self, owner_ids: Sequence[int]) -> set[int]:
        """Ids of the given owners' notes that are marked sensitive (any category)."""
        owners = owner_list(owner_ids)
        d = self.dialect
        rows = self._reading(
            owners,
            lambda tx: tx.rows(
                f"SELECT id FROM notes WHERE {d.ids('owner_id')} AND sensitivity IS NOT NULL", (d.bind_ids(owners),)
            ),
        )
        return {int(r[0]) for r in rows}

    # ---- writing a note ----------------------------------------------------------------------------
    def _add_note(self, note: Note, key: str | None) -> Note:
        """add_note; with an idempotency `key` already stored (a retried call), the note stored under it."""
        embedding, sensitivity = validate_new_note(note)
        now = time.time()

        def add(tx: Tx) -> int:
            owner = f"SELECT 1 FROM users WHERE id = ?{self.dialect.lock('KEY SHARE')}"
            if tx.one(owner, (note.owner_id,)) is None:
                raise StoreError(f"no user with id {note.owner_id}", "add the user before their notes")
            note_id, created = self._insert_note_row(tx, note, embedding, sensitivity, (now, now), key)
            if created:
                self._index_note(tx, note_id, note, embedding)
                for link in note.links:
                    self._insert_link(tx, note_id, link.target_id, link.kind, now)
                self._bump(tx, note.owner_id)
            return note_id

        return self._stored(self._writing([note.owner_id], add), note.owner_id)

    def _insert_note_row(
        self,
        tx: Tx,
        note: Note,
        embedding: np.ndarray,
        sensitivity: str | None,
        times: tuple[float, float],
        key: str | None,
        retention: tuple[float | None, int, float | None] = NEW_NOTE_RETENTION,
    ) -> tuple[int, bool]:
        """Insert the note's row, sealed with its owner's key when the store seals; (its id, True), or (the id
        of the note stored before under idempotency `key`, False)."""
        note_id = self._next_id(tx, "notes")
        last_used, reinforcements, archived = retention
        values = {
            "id": note_id,
            "owner_id": note.owner_id,
            "modality": note.modality,
            **self._seal_note(self._write_key(tx, note.owner_id), note_id, note.owner_id, NoteText.of(note)),
            "timestamp": to_epoch(note.timestamp),
            "embedding": self.dialect.bind_vector(embedding),
            "source": note.source,
            "source_ref": note.source_ref,
            "created_at": times[0],
            "updated_at": times[1],
            "author_id": note.author_id,
            "last_used_at": last_used,
            "reinforcements": reinforcements,
            "archived_at": archived,
            "sensitivity": sensitivity,
            **self._index_columns(note),
            **({} if key is None else {"client_key": key}),
        }
        row = tx.one(*insert("notes", values, self.dialect, self.dialect.insert_note_suffix))
        if row is not None:
            return int(row[0]), True
        existing = tx.one("SELECT id FROM notes WHERE client_key = ?", (key,)) if key is not None else None
        if existing is not None:
            return int(existing[0]), False
        if note.source_ref is not None:  # unique per owner: a concurrent import stored this turn first
            same = tx.one(
                "SELECT id FROM notes WHERE owner_id = ? AND source_ref = ?", (note.owner_id, note.source_ref)
            )
            if same is not None:
                raise DuplicateNote(
                    f"owner {note.owner_id} already has note {same[0]} from {note.source_ref!r}",
                    "nothing to do: it was imported already",
                    note_id=int(same[0]),
                )
        raise StoreError(f"key {key!r} belongs to another owner's note", "use a fresh key")

    def _stored(self, note_id: int, owner_id: int | None = None) -> Note:
        """The note as stored after a write of `owner_id`'s memory."""
        stored = self.get_note(note_id)
        assert stored is not None
        return stored
