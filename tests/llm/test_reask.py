"""A second answer when the first only restates the question (kiosk.llm.reask), with test doubles."""

from __future__ import annotations

from doubles import FirstWordBanningLLM, ScriptedLLM

from kiosk.config import LLMConfig
from kiosk.llm.answer_form import shown_answer
from kiosk.llm.prompts import UNKNOWN_ANSWER, compact_answer_messages
from kiosk.llm.reask import replaced_restatement

QUESTION = "Where did Deborah meet her new neighbor Anna?"
MESSAGES = compact_answer_messages(QUESTION, [])


def reask(llm: object, reply: str) -> str | None:
    """The answer shown instead of `reply` when notes were given, with the default settings."""
    return replaced(llm, reply, True, LLMConfig())


def test_an_answer_that_restates_the_question_is_answered_again_without_its_words_first() -> None:
    llm = FirstWordBanningLLM(second="Yoga in the park.")
    assert reask(llm, "Anna") == "Yoga in the park."
    assert llm.banned == [["Anna"]]
    assert llm.calls[-1].messages == MESSAGES  # the same prompt, not a second turn


def test_all_words_of_a_restating_sentence_are_banned_without_their_punctuation() -> None:
    llm = FirstWordBanningLLM(second="At yoga")
    assert reask(llm, "Deborah did meet her new neighbor, Anna.") == "At yoga"
    assert llm.banned == [["Anna", "Deborah", "did", "her", "meet", "neighbor", "new"]]


def test_the_first_answer_stands_when_the_second_restates_the_question_too_or_is_empty() -> None:
    assert reask(FirstWordBanningLLM(second="neighbor Anna"), "Anna") is None
    assert reask(FirstWordBanningLLM(second="  "), "Anna") is None


def test_an_answer_that_says_something_new_is_not_asked_again() -> None:
    llm = FirstWordBanningLLM(second="never used")
    assert reask(llm, "At yoga in the park") is None
    assert reask(llm, "I don't know.") is None
    assert llm.calls == []


def test_a_backend_that_cannot_ban_first_words_keeps_the_first_answer() -> None:
    llm = ScriptedLLM(default="never used")
    assert reask(llm, "Anna") is None
    assert llm.calls == []


def replaced(llm: object, reply: str, notes_given: bool, settings: LLMConfig) -> str | None:
    shown = shown_answer(QUESTION, reply, settings.concise_answers)
    return replaced_restatement(
        llm,
        MESSAGES,
        QUESTION,
        reply,
        shown,
        notes_given=notes_given,
        settings=settings,
        max_tokens=16,
        temperature=0.0,
    )


def test_with_notes_a_restating_answer_is_answered_again_unless_switched_off() -> None:
    llm = FirstWordBanningLLM(second="Yoga in the park.")
    assert replaced(llm, "Anna", True, LLMConfig()) == "Yoga in the park."
    assert replaced(llm, "Anna", True, LLMConfig(reask_restated=False)) is None
    assert replaced(llm, "At yoga", True, LLMConfig()) is None
    assert llm.banned == [["Anna"]]


def test_without_notes_a_restating_answer_is_shown_as_i_dont_know_unless_switched_off() -> None:
    llm = FirstWordBanningLLM(second="never used")
    assert replaced(llm, "Anna", False, LLMConfig()) == UNKNOWN_ANSWER
    assert replaced(llm, "Anna", False, LLMConfig(unknown_restated_without_notes=False)) is None
    assert replaced(llm, "At yoga", False, LLMConfig()) is None
    assert llm.calls == []
