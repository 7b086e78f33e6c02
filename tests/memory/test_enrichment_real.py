"""One note enriched by the installed GGUF (issue #37.1): its tags name what the note is about, not the generic
categories the construction prompt gave ('family, work, hobby, travel' for the dogs below)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import KioskConfig, MemoryConfig
from kiosk.llm import create_llm
from kiosk.llm.locked import close_llm
from kiosk.memory import SqliteStore
from kiosk.memory.build import Draft, NoteBuilder
from kiosk.memory.enrichment import Enricher, EnrichmentQueue, is_pending

pytestmark = [pytest.mark.llm, pytest.mark.real_models, pytest.mark.slow]

DOGS = "I adopted three dogs named Max, Bella and Luna in July 2022."
GENERIC = {"family", "work", "hobby", "health", "travel", "feelings", "plans", "pets", "personal", "life"}


def test_the_real_model_gives_a_fast_note_specific_tags(
    base_config: KioskConfig, text_encoder: Any, tmp_path: Path
) -> None:
    config = base_config.model_copy(deep=True)
    config.llm.threads = 1
    llm = create_llm(config)
    store = SqliteStore(tmp_path / "memory.db")
    try:
        ann = store.add_user("Ann").id
        draft = Draft(ann, DOGS, datetime(2022, 7, 20, 18, 0, tzinfo=UTC), speaker="Ann")
        note_id = NoteBuilder(store, text_encoder, MemoryConfig(construction="fast")).build(draft).note.id

        reports = EnrichmentQueue(Enricher(store, text_encoder, llm)).run(lambda: False)

        note = store.get_note(int(note_id or 0))
        assert note is not None and not is_pending(note) and note.content == DOGS
        assert [r.outcome for r in reports] in (["enriched"], ["linked"]), reports[0].errors  # links: time allowing
        print("tags:", note.tags, "context:", note.context)
        tags = {t.lower() for t in note.tags}
        assert not tags <= GENERIC, note.tags
        named = {"dog", "dogs", "max", "bella", "luna", "adopt", "adopted", "adoption", "july", "2022"}
        assert any(set(tag.replace(",", " ").split()) & named for tag in tags), note.tags
        assert note.context.startswith("Ann said this on 20 July 2022")
    finally:
        store.close()
        close_llm(llm)
