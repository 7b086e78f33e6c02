"""llama-cpp-python on a local GGUF file; JSON schemas become llama.cpp grammars."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from kiosk.errors import LLMError, ModelError
from kiosk.llm.backend import Message, Usage
from kiosk.llm.cpu_support import built_for, verified_llama_build

PREFILL_CHUNK = 32  # tokens evaluated between checks for a waiting answer


def common_prefix_length(evaluated: list[int], tokens: list[int]) -> int:
    """How many of `tokens` the context already holds: the length of the shared leading run."""
    common = 0
    for a, b in zip(evaluated, tokens, strict=False):
        if a != b:
            break
        common += 1
    return common


class LlamaCppLLM:
    """A GGUF chat model in-process. Calls are serialised: one llama context serves one request at a time.

    Prompt processing is most of an answer's latency on a CPU, so the context is reused wherever the new
    prompt starts like what is already evaluated (llama-cpp-python's prefix match). Two things keep such a
    prefix ready: the KV state of each system prompt is saved once and restored when other work (a note
    construction) replaced it, and `prefill` evaluates a prompt ahead of time (while the person types),
    giving way to any real request at once. Prefix reuse only ever skips recomputing identical tokens, so the
    answer is the same as from a fresh context. `prompt_lookup_tokens` > 0 drafts that many answer tokens from
    n-grams of the prompt (llama-cpp-python's prompt-lookup speculative decoding); off by default: llama-cpp-python
    then computes the logits of every prompt token, which slows prompt processing, the larger share of an answer
    (bench/results/latency_50_lookup.md).
    """

    def __init__(
        self,
        gguf_path: Path,
        *,
        n_ctx: int = 4096,
        threads: int = 0,
        seed: int = 0,
        flash_attn: bool = False,
        reuse_system_prompt: bool = True,
        n_batch: int = 512,
        prompt_lookup_tokens: int = 0,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:  # not imported: loading a wrong build is fatal
            raise LLMError("llama-cpp-python is not installed", "install the package's llm extra")
        build = verified_llama_build()
        from llama_cpp import Llama

        if not gguf_path.is_file():
            raise ModelError(f"GGUF model {gguf_path} does not exist", "run `kiosk models pull` or fix llm.gguf_path")
        n_threads = threads or os.cpu_count() or 1
        draft = None
        if prompt_lookup_tokens:
            from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

            draft = LlamaPromptLookupDecoding(num_pred_tokens=prompt_lookup_tokens)
        try:
            self._llama = Llama(
                model_path=str(gguf_path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                flash_attn=flash_attn,
                n_batch=n_batch,
                n_ubatch=n_batch,
                draft_model=draft,
                logits_all=draft is not None,  # llama-cpp-python sizes its logits buffer by this flag alone
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"GGUF model {gguf_path} cannot be loaded ({exc})", "re-pull or replace the file") from exc
        self.name = gguf_path.stem
        self.path = gguf_path
        self.n_ctx = n_ctx
        self.last_usage = Usage()
        self.last_first_piece_s = 0.0
        self.reuse_system_prompt = reuse_system_prompt
        self.flash_attn = flash_attn
        self.prompt_lookup_tokens = prompt_lookup_tokens
        self.build_features = built_for(build)
        self._lock = threading.Lock()
        self._waiting = 0  # requests queued for the lock: a running prefill stops for them
        self._system_tokens: dict[str, list[int]] = {}
        self._system_states: dict[str, bytes] = {}
        self._formatter = self._chat_formatter()

    @property
    def answer_options(self) -> dict[str, Any]:
        """Settings besides the prompt that change the greedy answers (the eval's answer cache keys them): the
        llama.cpp build's instruction sets and flash attention round differently (bench/results/llama_build_f1.md,
        flash_attn_f1.md), and drafted tokens are checked in batches."""
        options: dict[str, Any] = {"llama_build": self.build_features} if self.build_features else {}
        if self.flash_attn:
            options["flash_attn"] = True
        if self.prompt_lookup_tokens:
            options["prompt_lookup_tokens"] = self.prompt_lookup_tokens
        return options

    def close(self) -> None:
        """Free the model now: left to interpreter shutdown, llama-cpp-python's __del__ prints a traceback."""
        self._acquire()
        try:
            self._llama.close()
        finally:
            self._lock.release()

    # ---- prompt tokens and context reuse --------------------------------------------------------------
    def _chat_formatter(self) -> Any:
        """The GGUF's own chat template, which llama-cpp-python also uses when it picked no built-in format."""
        if self._llama.chat_format != "chat_template.default":
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        model = self._llama._model
        bos = model.token_get_text(self._llama.token_bos()) if self._llama.token_bos() >= 0 else ""
        eos = model.token_get_text(self._llama.token_eos()) if self._llama.token_eos() >= 0 else ""
        return Jinja2ChatFormatter(
            template=self._llama.metadata["tokenizer.chat_template"], eos_token=eos, bos_token=bos
        )

    def prompt_tokens(self, messages: list[Message]) -> list[int] | None:
        """The tokens create_chat_completion evaluates for `messages` (None without a GGUF chat template)."""
        if self._formatter is None:
            return None
        prompt = str(self._formatter(messages=messages).prompt)
        bos = [self._llama.token_bos()] if self._llama._model.add_bos_token() else []
        return bos + list(self._llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    def _system_prefix(self, system: str) -> list[int]:
        one = self.prompt_tokens([{"role": "system", "content": system}, {"role": "user", "content": "a"}]) or []
        two = self.prompt_tokens([{"role": "system", "content": system}, {"role": "user", "content": "b"}]) or []
        common = 0
        for a, b in zip(one, two, strict=False):
            if a != b:
                break
            common += 1
        return one[:common]

    def _evaluated(self) -> list[int]:
        return [int(t) for t in self._llama.input_ids[: self._llama.n_tokens]]

    def _ready_system_prompt(self, messages: list[Message]) -> None:
        """Make the context start with the system prompt's KV state (lock held)."""
        if not self.reuse_system_prompt or self._formatter is None or not messages:
            return
        if messages[0].get("role") != "system":
            return
        import llama_cpp

        system = messages[0]["content"]
        if system not in self._system_tokens:
            self._system_tokens[system] = self._system_prefix(system)
        tokens = self._system_tokens[system]
        if not tokens or self._evaluated()[: len(tokens)] == tokens:
            return
        ctx = self._llama._ctx.ctx
        data = self._system_states.get(system)
        if data is None:  # first time: evaluate it and keep its KV state
            self._llama.reset()
            self._llama.eval(tokens)
            size = llama_cpp.llama_state_seq_get_size(ctx, 0)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
            self._system_states[system] = bytes(buffer[:written])
            return
        self._llama.reset()
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        source = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(ctx, source, len(data), 0) != len(data):
            return  # the context simply evaluates the whole prompt
        self._llama.input_ids[: len(tokens)] = tokens
        self._llama.n_tokens = len(tokens)
        self._llama._requires_eval = True

    def warm_up(self, system_prompts: list[str]) -> None:
        """At start-up: evaluate and keep each fixed system prompt, so no answer pays for it."""
        for system in system_prompts:
            with self._lock:
                self._ready_system_prompt([{"role": "system", "content": system}])

    def prefill(self, messages: list[Message]) -> int:
        """Evaluate the prompt `messages` ahead of its question; returns the tokens evaluated now.

        Never makes anyone wait: skipped while the model is busy, and stopped between chunks of
        PREFILL_CHUNK tokens as soon as a real request queues for the model."""
        if self._formatter is None or not self._lock.acquire(blocking=False):
            return 0
        try:
            tokens = self.prompt_tokens(messages) or []
            self._ready_system_prompt(messages)
            common = min(common_prefix_length(self._evaluated(), tokens), len(tokens) - 1)
            self._llama.n_tokens = common
            self._llama._requires_eval = True
            done = 0
            for start in range(common, len(tokens) - 1, PREFILL_CHUNK):
                if self._waiting:
                    break
                chunk = tokens[start : min(start + PREFILL_CHUNK, len(tokens) - 1)]
                self._llama.eval(chunk)
                done += len(chunk)
            return done
        except (ValueError, RuntimeError):
            self._llama.reset()  # a failed prefill only costs the reuse
            return 0
        finally:
            self._lock.release()

    def _acquire(self) -> None:
        self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            self._waiting -= 1

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
        return self._complete(messages, max_tokens, temperature, json_schema=json_schema, stop=stop)

    def chat_avoiding_first_words(
        self, messages: list[Message], words: Sequence[str], *, max_tokens: int, temperature: float = 0.0
    ) -> str:
        """One reply that does not start with any of `words` (as written, lower-case or capitalised, with or
        without a leading space): their first tokens are banned at the reply's first position only, so the
        words may still appear later ("flowers" banned as the first word, "a bed of flowers" allowed)."""
        banned = self._first_tokens(words)
        return self._complete(messages, max_tokens, temperature, first_banned=banned)

    def continue_reply(self, messages: list[Message], start: str, *, max_tokens: int, temperature: float = 0.0) -> str:
        """What the model writes after `start` when its reply to `messages` begins with `start` (kiosk.llm.lists).
        The prompt is the chat prompt with `start` appended, so the context of the reply that `start` came from is
        reused up to its end."""
        tokens = self.prompt_tokens(messages)
        if tokens is None:
            raise NotImplementedError(f"{self.name} has no chat template to continue a reply in")
        tokens += self._llama.tokenize(start.encode("utf-8"), add_bos=False, special=False)
        result = self._locked_generation(
            lambda: self._ready_system_prompt(messages),
            lambda: self._llama.create_completion(
                prompt=tokens, max_tokens=max_tokens, temperature=temperature, stop=["\n"]
            ),
        )
        return str(result["choices"][0].get("text") or "")

    def first_word_logprobs(self, messages: list[Message], words: Sequence[str]) -> dict[str, float]:
        """The log-probability of each of `words` (as written, lower-case or capitalised, with or without a leading
        space) being the first word of the reply to `messages` (kiosk.llm.notes_shift): the first position's
        softmax summed over the word's first tokens. The prompt's context is reused as for an answer."""
        import numpy as np
        from llama_cpp import LogitsProcessorList

        first_scores: list[Any] = []

        def capture(input_ids: Any, scores: Any) -> Any:
            if not first_scores:
                first_scores.append(np.array(scores, dtype=np.float64))
            return scores

        self._locked_generation(
            lambda: self._ready_system_prompt(messages),
            lambda: self._llama.create_chat_completion(
                messages=cast(Any, messages),
                max_tokens=1,
                temperature=0.0,
                logits_processor=LogitsProcessorList([capture]),
            ),
        )
        if not first_scores:
            raise LLMError("llama.cpp gave no scores for the reply's first word", "check the model")
        logits = first_scores[0]
        log_total = float(np.logaddexp.reduce(logits))
        return {word: float(np.logaddexp.reduce(logits[self._first_tokens([word])])) - log_total for word in words}

    def _first_tokens(self, words: Sequence[str]) -> list[int]:
        banned: set[int] = set()
        for word in words:
            for variant in {word, word.lower(), word[:1].upper() + word[1:]}:
                for spaced in (variant, " " + variant):
                    tokens = self._llama.tokenize(spaced.encode("utf-8"), add_bos=False, special=False)
                    if tokens:
                        banned.add(int(tokens[0]))
        return sorted(banned)

    def _complete(
        self,
        messages: list[Message],
        max_tokens: int,
        temperature: float,
        *,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
        first_banned: Sequence[int] = (),
    ) -> str:
        response_format = {"type": "json_object", "schema": json_schema} if json_schema is not None else None
        processors = None
        if first_banned:
            from llama_cpp import LogitsProcessorList

            processors = LogitsProcessorList([_banned_at_first_position(first_banned)])

        def prepare() -> None:
            if json_schema is None:
                self._ready_system_prompt(messages)

        result = self._locked_generation(
            prepare,
            lambda: self._llama.create_chat_completion(
                messages=cast(Any, messages),
                max_tokens=max_tokens,
                temperature=temperature,
                response_format=cast(Any, response_format),
                stop=stop,
                logits_processor=processors,
            ),
        )
        return str(result["choices"][0]["message"].get("content") or "")

    def _locked_generation(self, prepare: Callable[[], None], generate: Callable[[], Any]) -> dict[str, Any]:
        """`prepare` then `generate` under the model's lock, timed as one answer (last_usage)."""
        started = time.perf_counter()
        self._acquire()
        try:
            try:
                prepare()
                result = cast(dict[str, Any], generate())
            except (ValueError, RuntimeError) as exc:
                raise LLMError(f"llama.cpp failed to answer ({exc})", "shorten the prompt or check the model") from exc
        finally:
            self._lock.release()
        usage = result.get("usage") or {}
        self.last_usage = Usage(
            int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), time.perf_counter() - started
        )
        return result

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        started = time.perf_counter()
        pieces = 0
        self._acquire()
        try:
            self._ready_system_prompt(messages)
            chunks = self._llama.create_chat_completion(
                messages=cast(Any, messages), max_tokens=max_tokens, temperature=temperature, stream=True
            )
            for chunk in cast(Iterator[dict[str, Any]], chunks):
                text = chunk["choices"][0]["delta"].get("content")
                if text:
                    if not pieces:
                        self.last_first_piece_s = time.perf_counter() - started
                    pieces += 1
                    yield str(text)
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp failed to answer ({exc})", "shorten the prompt or check the model") from exc
        finally:
            self._lock.release()
        self.last_usage = Usage(0, pieces, time.perf_counter() - started)


def _banned_at_first_position(banned: Sequence[int]) -> Callable[[Any, Any], Any]:
    """A llama-cpp-python logits processor that rules out `banned` tokens for the first generated token only."""
    import numpy as np

    ids = np.asarray(banned, dtype=np.intp)
    prompt_length: list[int] = []

    def process(input_ids: Any, scores: Any) -> Any:
        if not prompt_length:
            prompt_length.append(len(input_ids))
        if len(input_ids) != prompt_length[0]:
            return scores
        scores = scores.copy()
        scores[ids] = -np.inf
        return scores

    return process
