"""llama-cpp-python on a local GGUF file; JSON schemas become llama.cpp grammars."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from kiosk.errors import LLMError, ModelError
from kiosk.llm.backend import Message, Usage


class LlamaCppLLM:
    """A GGUF chat model in-process. Calls are serialised: one llama context serves one request at a time."""

    def __init__(self, gguf_path: Path, *, n_ctx: int = 4096, threads: int = 0, seed: int = 0) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise LLMError("llama-cpp-python is not installed", "install the package's llm extra") from exc
        if not gguf_path.is_file():
            raise ModelError(f"GGUF model {gguf_path} does not exist", "run `kiosk models pull` or fix llm.gguf_path")
        n_threads = threads or os.cpu_count() or 1
        try:
            self._llama = Llama(
                model_path=str(gguf_path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"GGUF model {gguf_path} cannot be loaded ({exc})", "re-pull or replace the file") from exc
        self.name = gguf_path.stem
        self.path = gguf_path
        self.n_ctx = n_ctx
        self.last_usage = Usage()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Free the model now: left to interpreter shutdown, llama-cpp-python's __del__ prints a traceback."""
        with self._lock:
            self._llama.close()

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        response_format = {"type": "json_object", "schema": json_schema} if json_schema is not None else None
        started = time.perf_counter()
        with self._lock:
            try:
                result = self._llama.create_chat_completion(
                    messages=cast(Any, messages),
                    max_tokens=max_tokens,
                    temperature=temperature,
                    response_format=cast(Any, response_format),
                    stop=stop,
                )
            except (ValueError, RuntimeError) as exc:
                raise LLMError(f"llama.cpp failed to answer ({exc})", "shorten the prompt or check the model") from exc
        reply = cast(dict[str, Any], result)
        usage = reply.get("usage") or {}
        self.last_usage = Usage(
            int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), time.perf_counter() - started
        )
        return str(reply["choices"][0]["message"].get("content") or "")

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        started = time.perf_counter()
        pieces = 0
        with self._lock:
            try:
                chunks = self._llama.create_chat_completion(
                    messages=cast(Any, messages), max_tokens=max_tokens, temperature=temperature, stream=True
                )
                for chunk in cast(Iterator[dict[str, Any]], chunks):
                    text = chunk["choices"][0]["delta"].get("content")
                    if text:
                        pieces += 1
                        yield str(text)
            except (ValueError, RuntimeError) as exc:
                raise LLMError(f"llama.cpp failed to answer ({exc})", "shorten the prompt or check the model") from exc
        self.last_usage = Usage(0, pieces, time.perf_counter() - started)
