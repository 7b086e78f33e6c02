"""Notes in a person's pool that someone else wrote: marked as theirs in the prompt, never obeyed."""

from __future__ import annotations

from dataclasses import replace

from kiosk.memory.instructions import note_reads_as_instructions
from kiosk.memory.note import Note
from kiosk.memory.scopes import scope_kind
from kiosk.retrieval.results import Retrieval


def is_foreign(note: Note, asker: int | None) -> bool:
    """A group or public note someone other than the asker wrote (or whose author is gone)."""
    return scope_kind(note.scope) != "personal" and (asker is None or note.author_id != asker)


def without_foreign_instructions(retrieval: Retrieval, asker: int | None) -> Retrieval:
    """`retrieval` without other authors' notes that read as instructions to the assistant
    (kiosk.memory.instructions): a shared note may inform an answer, never steer it."""
    kept = [
        item for item in retrieval.notes if not (is_foreign(item.note, asker) and note_reads_as_instructions(item.note))
    ]
    return retrieval if len(kept) == len(retrieval.notes) else replace(retrieval, notes=kept)
