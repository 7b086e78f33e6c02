"""Note construction with the real text encoder; the LLM is the scripted double (real GGUF: tests/llm)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from doubles import ScriptedLLM

from kiosk.config import MemoryConfig
from kiosk.errors import LLMError, StoreError
from kiosk.llm.prompts import EVOLVE_SYSTEM, NOTE_SYSTEM
from kiosk.memory import SqliteStore
from kiosk.memory.build import ConstructionTuning, Draft, NoteBuilder, human_date
from kiosk.memory.keywords import candidates

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
GOOD_ATTRS = json.dumps(
    {"keywords": ["support group", " LGBTQ"], "context": "Caroline talks about a support group.", "tags": ["community"]}
)


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "memory.db")


def _draft(owner: int, content: str, ref: str | None = None) -> Draft:
    return Draft(owner, content, WHEN, speaker="Caroline", source="import", source_ref=ref)


def _evolve_reply(**fields: Any) -> str:
    base: dict[str, Any] = {"links": [], "strengthen": False, "tags": [], "update_neighbors": False, "neighbors": []}
    return json.dumps({**base, **fields})


def test_human_date_matches_locomo_style() -> None:
    assert human_date(WHEN) == "8 May 2023, 1:56 pm"
    assert human_date(datetime(2023, 1, 2, 0, 5, tzinfo=UTC)) == "2 January 2023, 12:05 am"


def test_keyword_candidates_skip_stop_words() -> None:
    found = candidates("Hey Mel! I went to the LGBTQ support group yesterday.")
    assert "support group" in found and "LGBTQ" in found
    assert not {"Hey", "the", "I"} & set(found)


def test_fast_mode_keywords_context_embedding_and_links(store: SqliteStore, text_encoder: Any) -> None:
    owner = store.add_user("Ann").id
    other = store.add_user("Bob").id
    builder = NoteBuilder(
        store, text_encoder, MemoryConfig(construction="fast"), tuning=ConstructionTuning(link_similarity=0.5)
    )
    other_note = builder.build(Draft(other, "I adopted a puppy named Rex last week.", WHEN)).note
    first = builder.build(_draft(owner, "I adopted a puppy named Rex last week.", "D1:1")).note
    report = builder.build(_draft(owner, "My new puppy Rex loves the park.", "D1:2"))
    note = report.note
    assert report.attributes == "fast" and report.mode == "fast"
    assert "Rex" in " ".join(note.keywords) or "puppy" in " ".join(note.keywords)
    assert note.context == "Caroline said this on 8 May 2023, 1:56 pm."
    assert [link.target_id for link in note.links] == [first.id]  # never Bob's identical note
    assert store.links(first.id or 0)[0].target_id == note.id
    expected = text_encoder.encode([note.embedding_text()])[0]
    assert note.embedding is not None and float(note.embedding @ expected) > 0.999
    assert other_note.id not in [link.target_id for link in note.links]


def test_llm_mode_attributes_links_and_neighbour_evolution(store: SqliteStore, text_encoder: Any) -> None:
    owner = store.add_user("Ann").id
    stranger = store.add_user("Bob").id
    fast = NoteBuilder(store, text_encoder, MemoryConfig(construction="fast"))
    earlier = fast.build(_draft(owner, "I joined an LGBTQ support group.", "D1:1")).note
    bob_note = fast.build(Draft(stranger, "I joined an LGBTQ support group.", WHEN)).note
    llm = ScriptedLLM(
        {
            NOTE_SYSTEM: GOOD_ATTRS,
            EVOLVE_SYSTEM: _evolve_reply(
                links=[1],
                strengthen=True,
                tags=["community", "identity"],
                update_neighbors=True,
                neighbors=[{"number": 1, "context": "Caroline's first support group visit.", "tags": ["community"]}],
            ),
        }
    )
    builder = NoteBuilder(store, text_encoder, MemoryConfig(construction="llm"), llm)
    report = builder.build(_draft(owner, "The support group was so powerful.", "D1:2"))
    note = report.note
    assert (report.attributes, report.evolution) == ("parsed", "parsed")
    assert note.keywords == ["support group", "LGBTQ"]  # cleaned of the model's stray spaces
    assert note.tags == ["community", "identity"]  # strengthened
    assert note.context.startswith("Caroline talks about a support group.") and "8 May 2023" in note.context
    assert [link.target_id for link in note.links] == [earlier.id]
    evolved = store.get_note(earlier.id or 0)
    assert evolved is not None and evolved.context == "Caroline's first support group visit."
    assert evolved.tags == ["community"]
    (entry,) = store.history(earlier.id or 0)
    assert entry.reason == f"evolution: update_neighbor after note {note.id}"
    assert entry.after["context"] == "Caroline's first support group visit."
    assert evolved.embedding is not None and earlier.embedding is not None
    assert not np.allclose(evolved.embedding, earlier.embedding)  # re-encoded with the new context
    # the evolution prompt only ever showed the owner's notes
    evolve_call = next(c for c in llm.calls if EVOLVE_SYSTEM in c.text)
    assert "1. I joined" in evolve_call.text and "2." not in evolve_call.text
    assert store.history(bob_note.id or 0) == []
    assert evolve_call.json_schema is not None
    assert evolve_call.json_schema["properties"]["links"]["items"]["enum"] == [1]


def test_invalid_reply_is_retried_once_then_parsed(store: SqliteStore, text_encoder: Any) -> None:
    owner = store.add_user("Ann").id
    llm = ScriptedLLM({NOTE_SYSTEM: ['{"keywords": [], "context": "", "tags": []}', GOOD_ATTRS]})
    report = NoteBuilder(store, text_encoder, MemoryConfig(), llm).build(_draft(owner, "Support group today."))
    assert report.attributes == "retried"
    assert report.note.tags == ["community"]
    retry = llm.calls[1]
    assert retry.messages[-2] == {"role": "assistant", "content": '{"keywords": [], "context": "", "tags": []}'}
    assert "not valid" in retry.messages[-1]["content"]


def test_two_bad_replies_store_the_note_without_attributes(
    store: SqliteStore, text_encoder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    owner = store.add_user("Ann").id
    llm = ScriptedLLM({NOTE_SYSTEM: "this is not json"})
    with caplog.at_level(logging.WARNING):
        report = NoteBuilder(store, text_encoder, MemoryConfig(), llm).build(_draft(owner, "Remember the milk."))
    assert report.attributes == "failed" and len([c for c in llm.calls if NOTE_SYSTEM in c.text]) == 2
    stored = store.get_note(report.note.id or 0)
    assert stored is not None and stored.content == "Remember the milk."
    assert stored.keywords == [] and stored.tags == []
    assert stored.context == "Caroline said this on 8 May 2023, 1:56 pm."
    assert any("storing without these attributes" in r.message for r in caplog.records)


def test_llm_errors_fall_back_too(store: SqliteStore, text_encoder: Any) -> None:
    class BrokenLLM(ScriptedLLM):
        def chat(self, messages: Any, **kwargs: Any) -> str:
            raise LLMError("server down", "start it")

    owner = store.add_user("Ann").id
    report = NoteBuilder(store, text_encoder, MemoryConfig(), BrokenLLM()).build(_draft(owner, "Still stored."))
    assert report.attributes == "failed" and store.count_notes(owner) == 1
    assert any("server down" in e for e in report.errors)


def test_a_neighbour_the_llm_updates_is_linked_even_when_it_lists_no_links(
    store: SqliteStore, text_encoder: Any
) -> None:
    owner = store.add_user("Ann").id
    first = NoteBuilder(store, text_encoder, MemoryConfig()).build(_draft(owner, "Dog walk."), "fast").note
    reply = _evolve_reply(
        update_neighbors=True, neighbors=[{"number": 1, "context": "Walks with the dog.", "tags": []}]
    )
    llm = ScriptedLLM({NOTE_SYSTEM: GOOD_ATTRS, EVOLVE_SYSTEM: reply})
    report = NoteBuilder(store, text_encoder, MemoryConfig(), llm).build(_draft(owner, "Dog walk again."))
    assert report.linked == [first.id]
    assert [link.target_id for link in store.links(first.id or 0)] == [report.note.id]


def test_evolution_disabled_keeps_neighbours(store: SqliteStore, text_encoder: Any) -> None:
    owner = store.add_user("Ann").id
    first = NoteBuilder(store, text_encoder, MemoryConfig()).build(_draft(owner, "Dog walk."), "fast").note
    llm = ScriptedLLM(
        {
            NOTE_SYSTEM: GOOD_ATTRS,
            EVOLVE_SYSTEM: _evolve_reply(
                links=[1], update_neighbors=True, neighbors=[{"number": 1, "context": "changed", "tags": ["x"]}]
            ),
        }
    )
    report = NoteBuilder(store, text_encoder, MemoryConfig(), llm, ConstructionTuning(evolve=False)).build(
        _draft(owner, "Dog walk again.")
    )
    assert report.linked == [first.id] and report.evolved_neighbours == []
    assert store.history(first.id or 0) == []


def test_llm_mode_without_llm_is_a_clear_error(store: SqliteStore, text_encoder: Any) -> None:
    owner = store.add_user("Ann").id
    with pytest.raises(LLMError, match="no LLM"):
        NoteBuilder(store, text_encoder, MemoryConfig()).build(_draft(owner, "x"), "llm")


def test_build_many_matches_single_builds_and_isolates_failures(store: SqliteStore, text_encoder: Any) -> None:
    owner = store.add_user("Ann").id
    config = MemoryConfig(construction="fast")
    tuning = ConstructionTuning(link_similarity=0.5)
    texts = ["I adopted a puppy named Rex.", "Rex chewed my running shoes.", "Work was busy with the audit."]
    batch = NoteBuilder(store, text_encoder, config, tuning=tuning).build_many(
        [_draft(owner, texts[0]), _draft(owner + 99, texts[1]), _draft(owner, texts[2])]
    )
    assert isinstance(batch[1], StoreError) and "no user" in batch[1].message
    stored = [r for r in batch if not isinstance(r, StoreError)]
    assert [r.note.content for r in stored] == [texts[0], texts[2]]
    single_store = SqliteStore(store.path.with_name("single.db") if store.path else ":memory:")
    single_owner = single_store.add_user("Ann").id
    single = NoteBuilder(single_store, text_encoder, config, tuning=tuning).build(_draft(single_owner, texts[2])).note
    batched = stored[1].note
    assert batched.keywords == single.keywords and batched.context == single.context
    assert batched.embedding is not None and single.embedding is not None
    assert float(batched.embedding @ single.embedding) > 0.999
