"""On-disk answer cache keyed by (model sha256, prompt): identical prompts across conditions run once.

The cache wraps any LLM backend transparently, so the assistant under test builds its prompts as it
always does; only the generation is skipped when the exact same request was answered before by the
same model file. Greedy decoding (temperature 0) makes that reuse exact.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kiosk.errors import StoreError
from kiosk.llm.backend import optional_ability


def request_key(model_sha256: str, messages: list[dict[str, str]], **options: Any) -> str:
    payload = json.dumps({"model": model_sha256, "messages": messages, "options": options}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class AnswerCache:
    """A small SQLite table of (key -> answer, generation seconds); safe to share between runs."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT, answer TEXT, seconds REAL,"
                " created REAL)"
            )
            self._db.commit()
        except sqlite3.Error as exc:
            raise StoreError(
                f"answer cache {path} cannot be opened ({exc})", "delete the file to start afresh"
            ) from exc
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> tuple[str, float] | None:
        with self._lock:
            row = self._db.execute("SELECT answer, seconds FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return str(row[0]), float(row[1])

    def put(self, key: str, model: str, answer: str, seconds: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)", (key, model, answer, seconds, time.time())
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedLLM:
    """An LLM that answers from the cache when the exact request was seen for this model file."""

    def __init__(self, inner: Any, model_sha256: str, cache: AnswerCache | None) -> None:
        self._inner = inner
        self.name: str = getattr(inner, "name", "llm")
        self.model_sha256 = model_sha256
        self._cache = cache
        self.generation_seconds: list[float] = []  # uncached generations only: the latency figures
        self.last_cached = False  # whether the last answer came from the cache

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        context: dict[str, Any] = dict(getattr(self._inner, "answer_options", {}))

        def generate() -> str:
            return str(
                self._inner.chat(
                    messages, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema, stop=stop
                )
            )

        key = request_key(
            self.model_sha256, messages, max_tokens=max_tokens, json_schema=json_schema, stop=stop, **context
        )
        return self._respond(key, generate, temperature)

    def chat_avoiding_first_words(
        self, messages: list[dict[str, str]], words: Sequence[str], *, max_tokens: int, temperature: float = 0.0
    ) -> str:
        """The backend's reply that starts with none of `words` (kiosk.llm.reask), cached like `chat`."""
        options = {"avoid_first_words": list(words)}
        return self._by_ability(
            "chat_avoiding_first_words", "ban a reply's first words", messages, words, options, max_tokens, temperature
        )

    def continue_reply(
        self, messages: list[dict[str, str]], start: str, *, max_tokens: int, temperature: float = 0.0
    ) -> str:
        """What the backend writes after `start` in its reply to `messages` (kiosk.llm.lists), cached like `chat`."""
        options = {"reply_start": start}
        return self._by_ability("continue_reply", "continue a reply", messages, start, options, max_tokens, temperature)

    def first_word_logprobs(self, messages: list[dict[str, str]], words: Sequence[str]) -> dict[str, float]:
        """The backend's log-probability of each of `words` opening the reply (kiosk.llm.notes_shift), cached like
        `chat`; raises NotImplementedError when the backend cannot score first words."""
        call = optional_ability(self._inner, "first_word_logprobs", "score a reply's first words")

        def generate() -> str:
            return json.dumps(call(messages, words))

        options = {"first_word_logprobs": list(words), **getattr(self._inner, "answer_options", {})}
        key = request_key(self.model_sha256, messages, **options)
        return {word: float(value) for word, value in json.loads(self._respond(key, generate, 0.0)).items()}

    def _by_ability(
        self,
        method: str,
        ability: str,
        messages: list[dict[str, str]],
        argument: Any,
        key_options: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> str:
        """The backend's `method(messages, argument, ...)` reply, cached like `chat` under `key_options`; raises
        NotImplementedError when the backend cannot `ability`."""
        call = optional_ability(self._inner, method, ability)

        def generate() -> str:
            return str(call(messages, argument, max_tokens=max_tokens, temperature=temperature))

        options = {"max_tokens": max_tokens, **key_options, **getattr(self._inner, "answer_options", {})}
        key = request_key(self.model_sha256, messages, **options)
        return self._respond(key, generate, temperature)

    def _respond(self, key: str, generate: Callable[[], str], temperature: float) -> str:
        """The cached answer for `key` when greedy decoding makes it reusable, else a fresh one."""
        if self._cache is not None and temperature == 0.0:
            return self._cached(key, generate)
        self.last_cached = False
        return self._timed(generate)[0]

    def stream(self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        yield self.chat(messages, max_tokens=max_tokens, temperature=temperature)

    def _timed(self, generate: Callable[[], str]) -> tuple[str, float]:
        started = time.perf_counter()
        answer = generate()
        seconds = time.perf_counter() - started
        self.generation_seconds.append(seconds)
        return answer, seconds

    def _cached(self, key: str, generate: Callable[[], str]) -> str:
        assert self._cache is not None
        hit = self._cache.get(key)
        self.last_cached = hit is not None
        if hit is not None:
            self._cache.hits += 1
            return hit[0]
        self._cache.misses += 1
        answer, seconds = self._timed(generate)
        self._cache.put(key, self.name, answer, seconds)
        return answer

    def __getattr__(self, item: str) -> Any:
        return getattr(self._inner, item)
