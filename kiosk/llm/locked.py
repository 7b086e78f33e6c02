"""One LLM shared by threads (answers, note construction, an admin's model swap) behind one lock.

llama.cpp contexts are not thread-safe: every call, a whole stream included, holds the lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from kiosk.llm.backend import LLM, Message, optional_ability

log = logging.getLogger(__name__)


class LockedLLM:
    """An LLM whose calls never overlap; `swap` replaces the backend between two calls."""

    def __init__(self, llm: LLM) -> None:
        self.inner = llm
        self.name = llm.name
        self.lock = threading.Lock()

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        with self.lock:
            return self.inner.chat(
                messages, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema, stop=stop
            )

    def chat_avoiding_first_words(
        self, messages: list[Message], words: Sequence[str], *, max_tokens: int, temperature: float = 0.0
    ) -> str:
        avoid = optional_ability(self.inner, "chat_avoiding_first_words", "ban a reply's first words")
        with self.lock:
            return str(avoid(messages, words, max_tokens=max_tokens, temperature=temperature))

    def continue_reply(self, messages: list[Message], start: str, *, max_tokens: int, temperature: float = 0.0) -> str:
        go_on = optional_ability(self.inner, "continue_reply", "continue a reply")
        with self.lock:
            return str(go_on(messages, start, max_tokens=max_tokens, temperature=temperature))

    def first_word_logprobs(self, messages: list[Message], words: Sequence[str]) -> dict[str, float]:
        score = optional_ability(self.inner, "first_word_logprobs", "score a reply's first words")
        with self.lock:
            return dict(score(messages, words))

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        with self.lock:
            yield from self.inner.stream(messages, max_tokens=max_tokens, temperature=temperature)

    def warm_up(self, system_prompts: list[str]) -> None:
        warm = getattr(self.inner, "warm_up", None)
        if warm is not None:
            with self.lock:
                warm(system_prompts)

    def prefill(self, messages: list[Message]) -> int:
        """Not under the lock: the backend's prefill never waits and gives way to any queued request."""
        prefill = getattr(self.inner, "prefill", None)
        return int(prefill(messages)) if prefill is not None else 0

    def swap(self, llm: LLM) -> LLM:
        """Use `llm` from the next call on; returns the previous backend (the caller closes it)."""
        with self.lock:
            old, self.inner = self.inner, llm
            self.name = llm.name
        return old


def close_llm(llm: object) -> None:
    """Free a llama.cpp model now: left to interpreter shutdown, llama-cpp-python's __del__ prints a traceback."""
    close = getattr(llm, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            log.exception("closing the language model")
