"""Background enrichment of fast-built notes (issue #37.1), with the scripted LLM double and a bag-of-words encoder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from doubles import BagOfWordsEncoder, ScriptedLLM

from kiosk.config import MemoryConfig
from kiosk.errors import LLMError
from kiosk.memory import SqliteStore
from kiosk.memory.build import Draft, NoteBuilder
from kiosk.memory.enrichment import (
    ENRICH_SYSTEM,
    LINK_SYSTEM,
    Enricher,
    EnrichmentBudget,
    EnrichmentQueue,
    is_pending,
)
from kiosk.memory.scopes import public_owner
from kiosk.security.sealing import MasterKey, new_key

WORD_OR_NUMBER = r"[a-z0-9]+"
WHEN = datetime(2022, 7, 3, 10, 0, tzinfo=UTC)
DOGS = "I adopted three dogs named Max, Bella and Luna in July 2022."
ATTRS = json.dumps(
    {"keywords": ["Max", "Bella", "Luna"], "context": "Ann has three new dogs.", "tags": ["dog adoption", "Max"]}
)
NO_LINKS = json.dumps({"links": [], "neighbors": []})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "memory.db")


def remember(store: SqliteStore, owner: int, content: str, minutes: int = 0) -> int:
    """A note as the kiosk stores it: fast construction."""
    draft = Draft(owner, content, WHEN + timedelta(minutes=minutes), speaker="Ann")
    built = NoteBuilder(store, BagOfWordsEncoder(WORD_OR_NUMBER), MemoryConfig(construction="fast")).build(draft)
    assert built.note.id is not None
    return built.note.id


def queue_for(
    store: SqliteStore, llm: Any, budget: EnrichmentBudget | None = None, clock: Any = None
) -> EnrichmentQueue:
    enricher = Enricher(
        store,
        BagOfWordsEncoder(WORD_OR_NUMBER),
        llm,
        budget or EnrichmentBudget(),
        **({"clock": clock} if clock else {}),
    )
    return EnrichmentQueue(enricher)


def test_a_fast_note_is_pending_and_enrichment_only_adds_attributes(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    note_id = remember(store, ann, DOGS)
    store.mark_sensitivity(note_id, "third_party", by="owner")
    before = store.get_note(note_id)
    assert before is not None and is_pending(before)
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)

    reports = queue_for(store, llm).run(lambda: False)

    after = store.get_note(note_id)
    assert after is not None and not is_pending(after)
    assert [r.outcome for r in reports] == ["linked"] and len(llm.calls) == 1  # no neighbour: no links call
    assert after.tags == ["dog adoption", "Max"]
    assert after.keywords[:3] == ["Max", "Bella", "Luna"] and set(before.keywords) <= set(after.keywords)
    assert after.context.startswith(before.context) and after.context.endswith("Ann has three new dogs.")
    kept = ("content", "owner_id", "scope", "timestamp", "sensitivity", "author_id", "source")
    assert {k: getattr(after, k) for k in kept} == {k: getattr(before, k) for k in kept}
    assert after.embedding is not None and before.embedding is not None
    assert not np.allclose(after.embedding, before.embedding)  # re-encoded with the new attributes
    assert "Message from Ann" in llm.calls[0].text
    assert store.history(note_id)[-1].reason == "enrichment"


def test_sealed_notes_stay_sealed_and_readable(tmp_path: Path) -> None:
    key = MasterKey(new_key(), "test")
    store = SqliteStore(tmp_path / "sealed.db", master_key=key)
    ann = store.add_user("Ann").id
    note_id = remember(store, ann, DOGS)
    queue_for(store, ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)).run(lambda: False)
    store.close()
    raw = (tmp_path / "sealed.db").read_bytes()
    assert b"Bella" not in raw and b"dog adoption" not in raw
    reopened = SqliteStore(tmp_path / "sealed.db", master_key=key)
    note = reopened.get_note(note_id)
    assert note is not None and note.content == DOGS and note.tags == ["dog adoption", "Max"]


def test_a_crash_leaves_the_rest_pending_and_a_new_queue_resumes(store: SqliteStore, tmp_path: Path) -> None:
    ann = store.add_user("Ann").id
    ids = [remember(store, ann, f"Note {i} about the garden shed key", minutes=i) for i in range(3)]
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS)
    assert len(queue_for(store, llm).run(lambda: False, max_notes=1)) == 1
    store.close()  # the process ends here

    reopened = SqliteStore(tmp_path / "memory.db")
    resumed = queue_for(reopened, ScriptedLLM({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS))
    assert resumed.pending() == ids[1:]
    assert [r.note_id for r in resumed.run(lambda: False)] == ids[1:]
    assert resumed.pending() == []


def test_a_failed_llm_call_leaves_the_note_pending_once_per_start(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    note_id = remember(store, ann, DOGS)

    class Broken(ScriptedLLM):
        def chat(self, messages: Any, **kwargs: Any) -> str:
            raise LLMError("the model crashed")

    queue = queue_for(store, Broken())
    assert [r.outcome for r in queue.run(lambda: False)] == ["failed"]
    note = store.get_note(note_id)
    assert note is not None and is_pending(note)
    assert queue.run(lambda: False) == []  # not retried in a loop
    assert queue_for(store, Broken()).pending() == [note_id]  # the next start tries again


def test_the_queue_yields_to_a_question_between_notes_and_between_steps(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    first = remember(store, ann, "The garden shed key is under the blue pot", minutes=0)
    remember(store, ann, "The garden shed key is now in the kitchen drawer", minutes=1)
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS, LINK_SYSTEM: NO_LINKS})
    queue = queue_for(store, llm)
    queue.add(first)

    reports = queue.run(lambda: bool(llm.calls))  # a person arrives while the first enrichment call runs
    assert [r.outcome for r in reports] == ["enriched"]  # stopped before the links step and the second note
    assert len(llm.calls) == 1


def test_token_and_time_budgets(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    remember(store, ann, "The garden shed key is under the blue pot", minutes=0)
    remember(store, ann, "The garden shed key is now in the kitchen drawer", minutes=1)
    clock = Clock()

    class Slow(ScriptedLLM):
        def chat(self, messages: Any, **kwargs: Any) -> str:
            clock.now += 25.0
            return super().chat(messages, **kwargs)

    llm = Slow({ENRICH_SYSTEM: ATTRS, LINK_SYSTEM: NO_LINKS})
    budget = EnrichmentBudget(attribute_tokens=77, link_tokens=55, seconds_per_note=20.0)
    reports = queue_for(store, llm, budget, clock).run(lambda: False)
    assert [r.outcome for r in reports] == ["enriched", "enriched"]  # 25 s > 20 s: the links step is skipped
    assert [c.max_tokens for c in llm.calls] == [77, 77]

    llm = Slow({ENRICH_SYSTEM: ATTRS, LINK_SYSTEM: NO_LINKS})
    remember(store, ann, "The garden shed key went back under the blue pot", minutes=2)
    budget = EnrichmentBudget(attribute_tokens=77, link_tokens=55, seconds_per_note=30.0)
    assert [r.outcome for r in queue_for(store, llm, budget, clock).run(lambda: False)] == ["linked"]
    assert [c.max_tokens for c in llm.calls] == [77, 55]


def test_links_and_neighbour_tags_stay_inside_the_owner(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    bob = store.add_user("Bob").id
    public = public_owner(store)
    bob_note = remember(store, bob, "The garden shed key is under the blue pot")
    public_note = remember(store, public, "The garden shed key is under the blue pot, for everyone")
    own_old = remember(store, ann, "The garden shed key is under the blue pot", minutes=1)
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS, LINK_SYSTEM: NO_LINKS})
    queue_for(store, llm).run(lambda: False)  # everyone's notes enriched, no links yet
    new = remember(store, ann, "The garden shed key is now in the kitchen drawer", minutes=2)
    relink = json.dumps({"links": [1], "neighbors": [{"number": 1, "tags": ["shed key", "blue pot"]}]})
    llm = ScriptedLLM({ENRICH_SYSTEM: ATTRS, LINK_SYSTEM: relink})

    reports = queue_for(store, llm).run(lambda: False)

    assert [(r.note_id, r.outcome, r.linked, r.retagged_neighbours) for r in reports] == [
        (new, "linked", [own_old], [own_old])
    ]
    link_prompt = next(c.text for c in llm.calls if LINK_SYSTEM in c.text)
    assert "for everyone" not in link_prompt and link_prompt.count("blue pot") == 1  # only Ann's own note shown
    assert {link.target_id for link in store.links(new)} == {own_old}
    neighbour = store.get_note(own_old)
    assert neighbour is not None and neighbour.tags == ["shed key", "blue pot"]
    for foreign in (bob_note, public_note):
        other = store.get_note(foreign)
        assert other is not None and other.tags == ["dog adoption", "Max"] and not store.links(foreign)


def test_a_note_forgotten_meanwhile_is_skipped(store: SqliteStore) -> None:
    ann = store.add_user("Ann").id
    bob = store.add_user("Bob").id
    ann_note = remember(store, ann, DOGS)
    bob_note = remember(store, bob, "Bob's bike lock code is the year he was born")

    class ForgetsAnn(ScriptedLLM):
        def chat(self, messages: Any, **kwargs: Any) -> str:
            if DOGS in "\n".join(m["content"] for m in messages):
                store.delete_user(ann)  # forget-me while the LLM was working on her note
            return super().chat(messages, **kwargs)

    queue = queue_for(store, ForgetsAnn({ENRICH_SYSTEM: ATTRS}, default=NO_LINKS))
    reports = queue.run(lambda: False)
    assert [(r.note_id, r.outcome) for r in reports] == [(ann_note, "skipped"), (bob_note, "linked")]
    assert store.get_note(ann_note) is None
    assert store.count_notes(ann) == 0
