"""How the fleet store on PostgreSQL lays out a sealed row: a note's sealed fields (content, keywords, tags,
context) are one sealed JSON value in `notes.sealed`, bound to the note's id and owner, and the clear columns
hold empty placeholders; a history entry's before/after likewise in `history.sealed`. `sealed IS NULL` means
the row is in clear.

Every terminal of a fleet must hold the same master key (`security.key_file` or the keyring entry, copied to
each terminal): it unwraps the owners' data keys, which live in the database wrapped by it
(kiosk/memory/row_sealing.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from kiosk.memory.records import NoteText
from kiosk.memory.row_sealing import Opener, history_aad, note_aad
from kiosk.memory.sql.base import History, SqlBackend
from kiosk.security.sealing import Cipher

NOTE_SEALED = "sealed"
"""The field name in the associated data of a note's (or history entry's) sealed value."""


def seal_json(cipher: Cipher, value: Any, aad: bytes) -> bytes:
    return cipher.seal(json.dumps(value).encode("utf-8"), aad)


def open_json(cipher: Cipher, sealed: bytes, aad: bytes) -> Any:
    return json.loads(cipher.open(bytes(sealed), aad).decode("utf-8"))


def note_fields_aad(note_id: int, owner_id: int) -> bytes:
    return note_aad(note_id, owner_id, NOTE_SEALED)


def history_fields_aad(entry_id: int, note_id: int, owner_id: int) -> bytes:
    return history_aad(entry_id, note_id, owner_id, NOTE_SEALED)


def loaded_json(value: Any) -> Any:
    """A JSON column's value (text results come as strings, binary ones already loaded)."""
    return json.loads(value) if isinstance(value, str | bytes) else value


class PgRowFormat(SqlBackend):
    """The sealed-row layout of the fleet store: one sealed JSON value per row."""

    def _seal_note(self, cipher: Cipher | None, note_id: int, owner_id: int, text: NoteText) -> dict[str, Any]:
        if cipher is None:
            return {
                "content": text.content,
                "keywords": Jsonb(text.keywords),
                "tags": Jsonb(text.tags),
                "context": text.context,
                "sealed": None,
            }
        fields = {"content": text.content, "keywords": text.keywords, "tags": text.tags, "context": text.context}
        sealed = seal_json(cipher, fields, note_fields_aad(note_id, owner_id))
        return {"content": "", "keywords": Jsonb([]), "tags": Jsonb([]), "context": "", "sealed": sealed}

    def _open_note(self, note_id: int, owner_id: int, stored: Sequence[Any], opener: Opener) -> NoteText:
        content, keywords, tags, context, sealed = stored
        if sealed is None:
            return NoteText(content, list(loaded_json(keywords)), list(loaded_json(tags)), context)
        fields = open_json(opener(), sealed, note_fields_aad(note_id, owner_id))
        return NoteText(fields["content"], list(fields["keywords"]), list(fields["tags"]), fields["context"])

    def _seal_history(
        self, cipher: Cipher | None, entry_id: int, note_id: int, owner_id: int, before: Any, after: Any
    ) -> dict[str, Any]:
        if cipher is None:
            return {"before": Jsonb(before), "after": Jsonb(after), "sealed": None}
        sealed = seal_json(cipher, {"before": before, "after": after}, history_fields_aad(entry_id, note_id, owner_id))
        return {"before": Jsonb({}), "after": Jsonb({}), "sealed": sealed}

    def _open_history(
        self, entry_id: int, note_id: int, owner_id: int, stored: Sequence[Any], opener: Opener
    ) -> History:
        before, after, sealed = stored
        if sealed is None:
            return loaded_json(before), loaded_json(after)
        fields = open_json(opener(), sealed, history_fields_aad(entry_id, note_id, owner_id))
        return fields["before"], fields["after"]
