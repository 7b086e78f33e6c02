"""How the SQLite store lays out a sealed row: each sealed column on its own, a BLOB when sealed and TEXT when
in clear, so a database sealed half-way by an interrupted upgrade still reads and the upgrade resumes.

A note's content, keywords, tags and context, and a history entry's before and after, are each sealed with the
owner's data key and bound to their row and column (kiosk/memory/row_sealing.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw

from kiosk.memory.records import NoteText
from kiosk.memory.row_sealing import Opener, history_aad, note_aad
from kiosk.memory.sql.base import History, SqlBackend
from kiosk.security.sealing import Cipher, SealingError

NOTE_SEALED_FIELDS = ("content", "keywords", "tags", "context")
HISTORY_SEALED_FIELDS = ("before", "after")


def seal_text(cipher: Cipher | None, value: str, aad: bytes) -> str | bytes:
    return value if cipher is None else cipher.seal(value.encode("utf-8"), aad)


def open_text(opener: Opener | None, value: str | bytes, aad: bytes) -> str:
    """`value` itself when stored in clear; else opened with the cipher `opener()` gives."""
    if isinstance(value, str):
        return value
    if opener is None:
        raise SealingError("this memory database is encrypted", "open it with its master key (security settings)")
    return opener().open(bytes(value), aad).decode("utf-8")


def is_sealed_database(path: Path) -> bool:
    """The SQLite file at `path` was sealed by a keyed open (it holds the key check): opening it needs the key
    it was sealed with, so a missing key must never be replaced by a new one."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return False
    try:
        tables = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'key_check'").fetchall()
        return bool(tables) and bool(conn.execute("SELECT 1 FROM key_check").fetchall())
    except apsw.Error:
        return False  # not a kiosk database, or damaged: the store's open says which
    finally:
        conn.close()


class SqliteRowFormat(SqlBackend):
    """The sealed-row layout of the SQLite store: one sealed value per column."""

    def _seal_note(self, cipher: Cipher | None, note_id: int, owner_id: int, text: NoteText) -> dict[str, Any]:
        values = (text.content, json.dumps(text.keywords), json.dumps(text.tags), text.context)
        return {
            name: seal_text(cipher, value, note_aad(note_id, owner_id, name))
            for name, value in zip(NOTE_SEALED_FIELDS, values, strict=True)
        }

    def _open_note(self, note_id: int, owner_id: int, stored: Sequence[Any], opener: Opener) -> NoteText:
        content, keywords, tags, context = (
            open_text(opener, value, note_aad(note_id, owner_id, name))
            for name, value in zip(NOTE_SEALED_FIELDS, stored, strict=True)
        )
        return NoteText(content, list(json.loads(keywords)), list(json.loads(tags)), context)

    def _seal_history(
        self, cipher: Cipher | None, entry_id: int, note_id: int, owner_id: int, before: Any, after: Any
    ) -> dict[str, Any]:
        return {
            name: seal_text(cipher, json.dumps(value), history_aad(entry_id, note_id, owner_id, name))
            for name, value in zip(HISTORY_SEALED_FIELDS, (before, after), strict=True)
        }

    def _open_history(
        self, entry_id: int, note_id: int, owner_id: int, stored: Sequence[Any], opener: Opener
    ) -> History:
        before, after = (
            json.loads(open_text(opener, value, history_aad(entry_id, note_id, owner_id, name)))
            for name, value in zip(HISTORY_SEALED_FIELDS, stored, strict=True)
        )
        return before, after
