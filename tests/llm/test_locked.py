"""The kiosk's shared LLM wrapper passes the abilities to ban an answer's first words (kiosk.llm.reask) and to
continue a reply (kiosk.llm.lists) and to score its first words (kiosk.llm.notes_shift) through."""

from __future__ import annotations

import pytest
from doubles import FirstWordBanningLLM, FirstWordScoringLLM, ListContinuingLLM, ScriptedLLM

from kiosk.llm.locked import LockedLLM
from kiosk.llm.reask import reasked_answer

QUESTION = "Where did Deborah meet Anna?"
MESSAGES = [{"role": "user", "content": QUESTION}]


def test_the_locked_llm_bans_first_words_through_its_backend_under_the_lock() -> None:
    inner = FirstWordBanningLLM(second="At yoga")
    locked = LockedLLM(inner)
    assert locked.chat_avoiding_first_words(MESSAGES, ["Anna"], max_tokens=8) == "At yoga"
    assert inner.banned == [["Anna"]] and not locked.lock.locked()


def test_a_backend_that_cannot_ban_first_words_keeps_the_first_answer_behind_the_lock() -> None:
    locked = LockedLLM(ScriptedLLM(default="never used"))
    with pytest.raises(NotImplementedError):
        locked.chat_avoiding_first_words(MESSAGES, ["Anna"], max_tokens=8)
    assert reasked_answer(locked, MESSAGES, QUESTION, "Anna", max_tokens=8, temperature=0.0, concise=True) is None


def test_the_locked_llm_continues_a_reply_through_its_backend_under_the_lock() -> None:
    inner = ListContinuingLLM(more=" violin")
    locked = LockedLLM(inner)
    assert locked.continue_reply(MESSAGES, "Clarinet,", max_tokens=8) == " violin"
    assert inner.starts == ["Clarinet,"] and not locked.lock.locked()
    with pytest.raises(NotImplementedError):
        LockedLLM(ScriptedLLM(default="never used")).continue_reply(MESSAGES, "Clarinet,", max_tokens=8)


def test_the_locked_llm_scores_first_words_through_its_backend_under_the_lock() -> None:
    inner = FirstWordScoringLLM(with_notes=1.0, alone=-1.0)
    locked = LockedLLM(inner)
    assert locked.first_word_logprobs(MESSAGES, ("Yes", "No")) == {"Yes": -0.5, "No": 0.5}
    assert inner.scored == [MESSAGES] and not locked.lock.locked()
    with pytest.raises(NotImplementedError):
        LockedLLM(ScriptedLLM(default="never used")).first_word_logprobs(MESSAGES, ("Yes", "No"))
