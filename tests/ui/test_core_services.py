"""The kiosk's shared LLM wrapper passes the ability to ban an answer's first words through (kiosk.llm.reask)."""

from __future__ import annotations

import pytest
from doubles import FirstWordBanningLLM, ScriptedLLM

from kiosk.llm.reask import reasked_answer
from kiosk.ui.core_services import LockedLLM

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
