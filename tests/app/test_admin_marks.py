"""The admin service marks any note sensitive or not: the mark stands, and the owner's cached results go."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np
import pytest

from kiosk.app.admin import Admin
from kiosk.app.build import build_assistant
from kiosk.config import KioskConfig
from kiosk.errors import DataError
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM

VECTOR = np.eye(EMBEDDING_DIM, dtype=np.float32)[0]


class FixedEncoder:
    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        return np.tile(VECTOR, (len(sentences), 1))

    def encode_one(self, sentence: str) -> np.ndarray:
        return VECTOR


def test_admin_marks_and_unmarks_a_note_and_drops_cached_results(config: KioskConfig) -> None:
    with SqliteStore(":memory:") as store:
        ann = store.add_user("Ann").id
        when = datetime(2024, 1, 1, tzinfo=UTC)
        note = store.add_note(Note(None, ann, "face", "Dr Osei: two tablets a day", when, embedding=VECTOR))
        assistant = build_assistant(config, store, FixedEncoder(), thresholds={"face": 0.5})
        forgotten: list[int] = []
        assistant.retriever.forget_owner = lambda owner: forgotten.append(owner) or 0  # type: ignore[method-assign]
        admin = Admin(config, assistant, cast(Any, None), cast(Any, None), owns_llm=False)
        assert note.id is not None
        assert admin.mark_note(note.id, "health") == "health"
        assert store.sensitive_note_ids([ann]) == {note.id} and forgotten == [ann]
        assert admin.mark_note(note.id, "none") is None
        assert store.sensitive_note_ids([ann]) == set()
        assert [e.reason for e in store.history(note.id)] == ["sensitivity marked by admin"] * 2
        with pytest.raises(DataError, match="unknown sensitivity"):
            admin.mark_note(note.id, "medical")
