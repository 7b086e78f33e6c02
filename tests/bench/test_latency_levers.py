"""The latency bench's question draw and typing scenarios (bench/latency_levers.py)."""

from __future__ import annotations

from bench.latency_levers import mixed_sample, typed_words
from kiosk.eval.locomo import Question
from kiosk.eval.metrics import MULTI_HOP, SINGLE_HOP, TEMPORAL

QUESTIONS = [
    Question(conversation, index, f"question {index}?", "answer", category, ())
    for conversation in ("conv-a", "conv-b")
    for index, category in enumerate([SINGLE_HOP] * 4 + [MULTI_HOP] * 3 + [TEMPORAL] * 2)
]


def test_the_draw_takes_the_categories_in_turn_and_each_category_conversation_by_conversation() -> None:
    picked = mixed_sample(QUESTIONS, 7, seed=0)
    assert [q.category for q in picked] == [MULTI_HOP, TEMPORAL, SINGLE_HOP] * 2 + [MULTI_HOP]
    multi_hop = [q.conversation_id for q in picked if q.category == MULTI_HOP]
    assert multi_hop == ["conv-a", "conv-b", "conv-a"]
    assert [q.key for q in mixed_sample(QUESTIONS, 7, seed=0)] == [q.key for q in picked]
    assert len(mixed_sample(QUESTIONS, 100, seed=0)) == len(QUESTIONS)


def test_the_typed_words_are_half_or_all_but_the_last_word_and_never_empty() -> None:
    assert typed_words("where did Ann go hiking", "half") == "where did"
    assert typed_words("where did Ann go hiking", "last word") == "where did Ann go"
    assert typed_words("hiking?", "last word") == "hiking?"
    assert typed_words("hiking?", "half") == "hiking?"
