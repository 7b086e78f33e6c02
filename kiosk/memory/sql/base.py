"""What an SQL adapter supplies to the store logic both adapters share, and the small helpers that logic uses.

An adapter gives: its transactions (`_reading`, `_writing`), its `Dialect`, how it lays out a sealed note and
history entry in its columns, the upkeep of its search indexes (SQLite keeps vectors and lexical terms in index
tables of their own; PostgreSQL keeps both as columns of the note row), and its k-NN and lexical statements.
Everything else (validation, row mapping, links, history bookkeeping, scopes, templates, sealing at rest) is
written once in kiosk/memory/sql/.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar

import numpy as np

from kiosk.errors import StoreError
from kiosk.memory.note import Link, Note
from kiosk.memory.records import NOTE_COLUMNS, NoteText, links_by_source, note_from_row
from kiosk.memory.row_sealing import KeyRing, Opener
from kiosk.memory.sql.tx import Dialect, Owners, Tx
from kiosk.security.sealing import Cipher, SealingError

T = TypeVar("T")
History = tuple[dict[str, Any], dict[str, Any]]


class SqlBackend(ABC):
    """The adapter's side of a shared SQL store."""

    dialect: Dialect
    max_k: int
    """The largest k a k-NN query accepts."""
    _keys: KeyRing | None
    """Data keys when the store seals at rest (None: rows are stored in clear)."""
    locked_out: tuple[str, str]
    """(message, hint) when sealed data is met without the master key."""
    wrong_key: tuple[str, str]
    """(message, hint) when the master key is not the one the database was sealed with."""

    # ---- lifecycle and transactions ----------------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def _reading(self, owners: Owners, work: Callable[[Tx], T]) -> T:
        """Run `work` on a read view of the rows of `owners` (ALL: every owner's)."""

    @abstractmethod
    def _writing(self, owners: Owners, work: Callable[[Tx], T]) -> T:
        """Run `work` in one write transaction on the rows of `owners` (ALL: every owner's)."""

    @abstractmethod
    def _next_id(self, tx: Tx, table: str) -> int:
        """The id the next row of `table` takes (sealing binds a ciphertext to it before the insert)."""

    @abstractmethod
    def _rekey(self, tx: Tx, owner_id: int) -> int:
        """Give the owner a new data key and re-seal their rows with it (kiosk/memory/sql/sealing.py)."""

    def _reclaim(self, *, full: bool) -> None:
        """After an erasure: make the erased bytes unreadable in the database files."""
        return None  # by default the database's own deletion is enough (PostgreSQL)

    # ---- the sealed-row format ---------------------------------------------------------------------
    @abstractmethod
    def _seal_note(self, cipher: Cipher | None, note_id: int, owner_id: int, text: NoteText) -> dict[str, Any]:
        """Column -> value of the note's text as stored: in clear (cipher None) or sealed."""

    @abstractmethod
    def _open_note(self, note_id: int, owner_id: int, stored: Sequence[Any], opener: Opener) -> NoteText:
        """The note's text from its stored content, keywords, tags, context and `dialect.note_sealing` columns."""

    @abstractmethod
    def _seal_history(
        self, cipher: Cipher | None, entry_id: int, note_id: int, owner_id: int, before: Any, after: Any
    ) -> dict[str, Any]:
        """Column -> value of a history entry's before and after as stored."""

    @abstractmethod
    def _open_history(
        self, entry_id: int, note_id: int, owner_id: int, stored: Sequence[Any], opener: Opener
    ) -> History:
        """(before, after) from the stored before, after and `dialect.history_sealing` columns."""

    # ---- search indexes ----------------------------------------------------------------------------
    @abstractmethod
    def _knn_rows(self, tx: Tx, owners: list[int], vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Up to k (note id, cosine similarity) of these owners' active notes, the nearest."""

    @abstractmethod
    def _lexical_rows(self, tx: Tx, owners: list[int], query_text: str, k: int) -> list[tuple[int, float]]:
        """Up to k (note id, score; higher is better) of these owners' active notes matching the question."""

    @abstractmethod
    def _matrix(self, embeddings: list[Any]) -> np.ndarray:
        """Stored embeddings (at least one) -> an (n, 384) float32 matrix."""

    # The index upkeep below does nothing by default: the indexes are columns of the note row (PostgreSQL).
    def _index_columns(self, note: Note) -> dict[str, Any]:
        """Columns of the note row that index it (written with the row)."""
        return {}

    def _index_note(self, tx: Tx, note_id: int, note: Note, embedding: np.ndarray) -> None:
        """A new note enters the search indexes."""
        return None

    def _reindex_note(self, tx: Tx, note: Note, *, archived: bool, embedding: np.ndarray | None) -> None:
        """An updated note's index entries follow its new text (and its new embedding, unless None)."""
        return None

    def _restore_index(self, tx: Tx, note_id: int) -> None:
        """A restored note re-enters the search indexes."""
        return None

    def _unindex(self, tx: Tx, note_ids: Sequence[int], *, erase: bool) -> None:
        """These notes leave the search indexes (`erase`: their index data is overwritten first)."""
        return None

    def _unindex_owner(self, tx: Tx, owner_id: int) -> None:
        """An owner's notes are about to be deleted: their index entries are erased."""
        return None

    # ---- helpers of the shared logic ---------------------------------------------------------------
    @property
    def encrypted(self) -> bool:
        return self._keys is not None

    @property
    def _note_columns(self) -> str:
        return f"{NOTE_COLUMNS}{self.dialect.note_sealing}, k.generation, k.wrapped"

    @staticmethod
    def _bump(tx: Tx, owner_id: int) -> None:
        """The owner's memory changed: caches keyed by its version are stale."""
        tx.run(
            "INSERT INTO owner_versions (owner_id, version) VALUES (?, 1) "
            "ON CONFLICT (owner_id) DO UPDATE SET version = owner_versions.version + 1",
            (owner_id,),
        )

    def _write_key(self, tx: Tx, owner_id: int) -> Cipher | None:
        """The owner's data key for a write (created on first use, held against a concurrent re-key)."""
        return self._keys.cipher(tx, owner_id, create=True, lock=True) if self._keys is not None else None

    def _opener(self, owner_id: int, generation: Any, wrapped: Any) -> Opener:
        """Opens the owner's data key, read with the row, when a sealed value needs it."""

        def opened() -> Cipher:
            if self._keys is None:
                raise StoreError(*self.locked_out)
            if wrapped is None:
                raise SealingError(f"owner {owner_id} has no data key", "the database was altered; restore a backup")
            return self._keys.unwrapped(owner_id, int(generation), bytes(wrapped))

        return opened

    def _note(self, row: Sequence[Any], links: list[Link]) -> Note:
        """A note from a row of `_note_columns`, its sealed fields opened with its owner's key."""
        note_id, owner_id = int(row[0]), int(row[1])
        stored = (row[3], row[5], row[6], row[7], *row[20:-2])
        text = self._open_note(note_id, owner_id, stored, self._opener(owner_id, row[-2], row[-1]))
        return note_from_row(row, text, self.dialect.load_vector(row[8]), links)

    def _links_of(self, tx: Tx, note_ids: list[int]) -> dict[int, list[Link]]:
        if not note_ids:
            return {}
        d = self.dialect
        query = f"SELECT source_id, target_id, kind FROM links WHERE {d.ids('source_id')} ORDER BY source_id, target_id"
        return links_by_source(tx.rows(query, (d.bind_ids(note_ids),)))
