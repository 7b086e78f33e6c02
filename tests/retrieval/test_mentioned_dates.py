"""Days named without a year in a question rank the notes said then and the notes that name them, at the terminal
(a question with a local time); the LoCoMo replay (no local time) ranks as before."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
from doubles import unit

from kiosk.config import RetrievalConfig
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever
from kiosk.retrieval.mentioned_dates import mentioned_days

NEW_YORK = ZoneInfo("America/New_York")


def test_a_notes_days_are_read_from_its_local_time() -> None:
    said = datetime(2026, 11, 20, 21, 0, tzinfo=NEW_YORK)  # 02:00 UTC on the 21st
    assert mentioned_days("Dentist on the 14th at 10, pills tonight", said) == {date(2026, 12, 14), date(2026, 11, 20)}
    assert mentioned_days("Moving day is 2 January 2027", said) == {date(2027, 1, 2)}
    assert mentioned_days("Busy next week, then last Friday's bill", said) == set()  # spans, not days


def test_a_note_naming_the_asked_day_is_retrieved_though_it_was_said_days_before(store: SqliteStore) -> None:
    rng = np.random.default_rng(7)
    owner, other = store.add_user("anna").id, store.add_user("tom").id
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    start = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
    for day in range(10):
        near = unit(query + 0.3 * unit(rng.standard_normal(EMBEDDING_DIM)))
        store.add_note(Note(None, owner, "face", f"chat {day}", start + timedelta(hours=12 * day), embedding=near))
    # Thursday 10 December, 9 pm in New York: "next Monday" is the 14th there
    said = datetime(2026, 12, 11, 2, 0, tzinfo=UTC)
    aside = unit(rng.standard_normal(EMBEDDING_DIM))
    dentist = store.add_note(Note(None, owner, "face", "Dentist next Monday at 10", said, embedding=aside))
    store.add_note(Note(None, other, "face", "Dentist next Monday at 10", said, embedding=query))
    question = "What is on the 14th?"
    asked = datetime(2026, 12, 12, 9, 0, tzinfo=NEW_YORK)
    retriever = Retriever(store, RetrievalConfig())
    replay = retriever.retrieve([owner], query, question, k=5)
    assert dentist.id not in replay.note_ids  # no local time: "the 14th" names no day
    found = retriever.retrieve([owner], query, question, k=5, asked_at=asked)
    assert dentist.id in found.note_ids and len(found.note_ids) == 5
    assert {item.note.owner_id for item in found.notes} == {owner}
    hidden = retriever.retrieve([owner], query, question, k=5, asked_at=asked, exclude={int(dentist.id or 0)})
    assert dentist.id not in hidden.note_ids
    a_week_on = retriever.retrieve([owner], query, question, k=5, asked_at=asked + timedelta(days=7))
    assert dentist.id not in a_week_on.note_ids  # then "the 14th" is January's
