"""Scored notes and a recorded stand-in for the retrieval by a name, shared by the tests of the steps that join
later notes to a question's own (kiosk.retrieval.medicine_updates, kiosk.retrieval.errand_updates)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from kiosk.memory import Note
from kiosk.retrieval.results import Retrieval, ScoredNote

OWNER = 1


def scored(text: str, day: int, note_id: int) -> ScoredNote:
    """A note of OWNER said on `day` October 2026, scored 0.5."""
    note = Note(note_id, OWNER, "palm", text, datetime(2026, 10, day, 9, tzinfo=UTC))
    return ScoredNote(note, 0.5, 0.5)


def finder(*found: ScoredNote) -> tuple[list[str], Callable[[str], Retrieval]]:
    """The names searched for, and a search that records each name and finds `found`."""
    asked: list[str] = []

    def find(name: str) -> Retrieval:
        asked.append(name)
        return Retrieval(path="familiarity", notes=list(found))

    return asked, find
