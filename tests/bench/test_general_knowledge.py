"""The no-memory check's scoring: what counts as a refusal and as a right general answer."""

from __future__ import annotations

from bench.general_knowledge import (
    GENERAL_QUESTIONS,
    PERSONAL_QUESTIONS,
    answers_correctly,
    is_refusal,
)
from kiosk.llm.prompts import COMPACT_NO_MEMORY_SYSTEM, UNKNOWN_ANSWER


def test_a_refusal_is_the_unknown_answer_or_a_sentence_that_starts_with_it() -> None:
    assert is_refusal("I don't know", UNKNOWN_ANSWER)
    assert is_refusal("I don't know.", UNKNOWN_ANSWER)
    assert is_refusal("I do not know that.", UNKNOWN_ANSWER)
    assert not is_refusal("Tokyo", UNKNOWN_ANSWER)
    assert not is_refusal("Caroline said she didn't know.", UNKNOWN_ANSWER)
    assert not is_refusal("", UNKNOWN_ANSWER)


def test_a_general_answer_is_right_when_it_contains_an_accepted_answer_as_whole_words() -> None:
    assert answers_correctly("The capital is Tokyo.", ("Tokyo",))
    assert answers_correctly("Leonardo da Vinci", ("Leonardo", "da Vinci"))
    assert not answers_correctly("Kyoto", ("Tokyo",))
    assert not answers_correctly("1366", ("366",))
    assert not answers_correctly("10.0", ("100",))
    assert answers_correctly("Twenty-four hours", ("twenty-four",))


def test_the_sets_do_not_overlap_the_prompt_examples() -> None:
    """A question the prompt answers in its own examples would measure copying, not the rule."""
    asked = {g.question for g in GENERAL_QUESTIONS} | set(PERSONAL_QUESTIONS)
    assert len(asked) == len(GENERAL_QUESTIONS) + len(PERSONAL_QUESTIONS)
    assert not any(question in COMPACT_NO_MEMORY_SYSTEM for question in asked)
    assert all(g.answers and all(a.strip() for a in g.answers) for g in GENERAL_QUESTIONS)
