"""People named in a question and the speakers of notes, and the ranking of the named person's notes they add to
the fusion (the retriever's on the real store; the figures on LoCoMo are in bench/results/people.md)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from doubles import unit

from kiosk.config import RetrievalConfig
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever
from kiosk.retrieval.hybrid import fuse
from kiosk.retrieval.people import context_speaker, named_people
from kiosk.retrieval.pool_matrix import PoolMatrix
from kiosk.retrieval.tuning import RetrievalTuning


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What exercises has John done?", {"John"}),
        ("What is Caroline's plan, and did Melanie agree?", {"Caroline", "Melanie"}),
        ("When did Jon go to Paris in May 2023?", {"Jon", "Paris"}),
        ("What did I tell you on Monday about the LGBTQ group?", set()),
        ("how are you", set()),
    ],
)
def test_the_names_of_a_question(question: str, names: set[str]) -> None:
    assert named_people(question) == names


@pytest.mark.parametrize(
    ("context", "speaker"),
    [
        ("Caroline said this on 8 May 2023, 1:56 pm.", {"Caroline"}),
        ("Melanie said this on 8 May 2023, replying to Caroline: Hey Mel!", {"Melanie"}),
        ("The user said this on 8 May 2023.", set()),
        ("In May John tells Tim about his new gym routine.", {"John"}),
        ("", set()),
    ],
)
def test_the_speaker_of_a_note_is_the_first_name_of_its_context(context: str, speaker: set[str]) -> None:
    assert context_speaker(context) == speaker


def test_the_named_ranking_is_a_fourth_weighted_ranking_of_the_fusion() -> None:
    config = RetrievalTuning(dense_weight=1.0, lexical_weight=1.0, person_weight=2.0)
    fused = dict(fuse([(1, 0.9), (2, 0.5)], [(2, 3.0)], config, 10, named=[(3, 0.8), (4, 0.2)]))
    assert fused == pytest.approx({1: 1.0, 2: 1.0, 3: 2.0, 4: 0.0})
    off = replace(config, person_weight=0.0)
    assert dict(fuse([(1, 0.9)], [(2, 3.0)], off, 10, named=[(4, 0.9)])).keys() == {1, 2}


def test_named_search_keeps_the_named_rows_and_tells_nothing_when_all_rows_are_named() -> None:
    embeddings = np.eye(4, EMBEDDING_DIM)
    people = [frozenset({"Ann"}), frozenset({"Bob"}), frozenset({"Ann"}), frozenset()]
    pool = PoolMatrix(np.array([10, 11, 12, 13]), embeddings, people=people)
    query = embeddings[1] + 0.5 * embeddings[2]
    assert [note_id for note_id, _ in pool.named_search(query, 5, frozenset({"Ann"}))] == [12, 10]
    assert pool.named_search(query, 5, frozenset({"Ann"}), excluded=frozenset({12})) == [(10, 0.0)]
    everyone = PoolMatrix(np.array([1, 2]), embeddings[:2], people=[frozenset({"Ann"})] * 2)
    assert everyone.named_search(query, 5, frozenset({"Ann"})) == []
    with pytest.raises(ValueError, match="people"):
        PoolMatrix(np.array([1]), embeddings[:1]).named_search(query, 5, frozenset({"Ann"}))


def test_a_note_the_named_person_said_is_retrieved_though_the_other_speakers_are_closer(store: SqliteStore) -> None:
    """Tim's notes are nearer the question and name John as well (he replies to him); only the named ranking
    knows that John himself said the kickboxing note."""
    rng = np.random.default_rng(7)
    owner, other = store.add_user("ann").id, store.add_user("bob").id
    query = unit(rng.standard_normal(EMBEDDING_DIM))
    start = datetime(2023, 8, 1, tzinfo=UTC)
    for day in range(10):
        near = unit(query + 0.3 * unit(rng.standard_normal(EMBEDDING_DIM)))
        store.add_note(
            Note(
                None,
                owner,
                "face",
                f"I told you about day {day}",
                start + timedelta(days=day),
                context="Tim said this, replying to John: and then?",
                embedding=near,
            )
        )
    aside = unit(query + 1.5 * unit(rng.standard_normal(EMBEDDING_DIM)))
    johns = store.add_note(
        Note(
            None,
            owner,
            "face",
            "kickboxing twice a week",
            start,
            context="John said this, replying to Tim: what do you do for fun these days?",
            embedding=aside,
        )
    )
    store.add_note(Note(None, other, "face", "I box", start, context="John said this.", embedding=query))
    question = "What exercises has John done?"
    familiarity = RetrievalConfig()
    # BM25 matches "John" in every note's context here, so the lexical ranking weighs as much as the dense one.
    balanced = RetrievalTuning(lexical_weight=1.0, person_weight=0.0)
    plain = Retriever(store, familiarity, tuning=balanced).retrieve([owner], query, question, k=5)
    assert johns.id not in plain.note_ids
    retriever = Retriever(store, familiarity, tuning=replace(balanced, person_weight=3.0))
    found = retriever.retrieve([owner], query, question, k=5)
    assert johns.id in found.note_ids and len(found.note_ids) == 5
    assert {item.note.owner_id for item in found.notes} == {owner}
    hidden = retriever.retrieve([owner], query, question, k=5, exclude={int(johns.id or 0)})
    assert johns.id not in hidden.note_ids and len(hidden.note_ids) == 5
    unnamed = retriever.retrieve([owner], query, "What exercises were done?", k=5)
    assert johns.id not in unnamed.note_ids
