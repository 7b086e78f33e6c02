"""Times answers on one llama.cpp build: run by bench_latency with the interpreter of the build under test.

Imports only the standard library and llama_cpp (plus kiosk.llm.llamacpp when it is importable), so a
separate venv with a differently compiled llama-cpp-python can run it:
`python bench/latency_worker.py job.json result.json`.

A job: {"model": path, "llama": {Llama kwargs}, "kv_prefix": bool, "max_tokens": int,
"requests": [{"messages": [...], "prefill": [...] | null}]}. Before every request the context is reset,
as it is in the kiosk after a note construction used the model. With kv_prefix the saved system-prompt
state is restored instead; a request's "prefill" (the prompt built while the person was still typing) is
evaluated untimed first.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def run(job: dict[str, Any]) -> dict[str, Any]:
    from llama_cpp import Llama

    started = time.perf_counter()
    llama = Llama(model_path=job["model"], verbose=False, seed=0, **job["llama"])
    load_s = time.perf_counter() - started
    prefix = _SystemPrefix(llama) if job.get("kv_prefix") else None
    results = []
    for request in job["requests"]:
        llama.reset()
        if prefix is not None:
            prefix.restore(request["messages"])
        if request.get("prefill"):
            _complete(llama, request["prefill"], 1, prefix)
        first, total, first_cpu, total_cpu, text, completion = _timed_stream(
            llama, request["messages"], job["max_tokens"]
        )
        prompt_tokens = len(_prompt_tokens(llama, request["messages"]))
        results.append(
            {
                "first_token_s": first,
                "total_s": total,
                "first_token_cpu_s": first_cpu,
                "total_cpu_s": total_cpu,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "text": text,
            }
        )
    info = llama_system_info()
    llama.close()
    return {"load_s": load_s, "system_info": info, "results": results}


def llama_system_info() -> str:
    import llama_cpp

    return str(llama_cpp.llama_print_system_info().decode())


def _prompt_tokens(llama: Any, messages: list[dict[str, str]]) -> list[int]:
    text = _render(llama, messages)
    return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def _render(llama: Any, messages: list[dict[str, str]]) -> str:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata["tokenizer.chat_template"]
    eos = llama._model.token_get_text(llama.token_eos())
    bos = llama._model.token_get_text(llama.token_bos()) if llama.token_bos() >= 0 else ""
    formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
    return str(formatter(messages=messages).prompt)


class _SystemPrefix:
    """The KV cache of the fixed system prompt, evaluated once and restored before each answer."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.states: dict[str, tuple[list[int], bytes]] = {}

    def restore(self, messages: list[dict[str, str]]) -> None:
        import ctypes

        import llama_cpp

        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        if system not in self.states:
            one = _prompt_tokens(self.llama, [*messages[:1], {"role": "user", "content": "a"}])
            two = _prompt_tokens(self.llama, [*messages[:1], {"role": "user", "content": "b"}])
            common = 0
            for a, b in zip(one, two, strict=False):
                if a != b:
                    break
                common += 1
            tokens = one[:common]
            self.llama.reset()
            self.llama.eval(tokens)
            ctx = self.llama._ctx.ctx
            size = llama_cpp.llama_state_seq_get_size(ctx, 0)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
            self.states[system] = (tokens, bytes(buffer[:written]))
        tokens, data = self.states[system]
        self.llama.reset()
        ctx = self.llama._ctx.ctx
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        source = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        llama_cpp.llama_state_seq_set_data(ctx, source, len(data), 0)
        self.llama.input_ids[: len(tokens)] = tokens
        self.llama.n_tokens = len(tokens)
        self.llama._requires_eval = True


def _complete(llama: Any, messages: list[dict[str, str]], max_tokens: int, prefix: _SystemPrefix | None) -> None:
    llama.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0.0)


def _timed_stream(
    llama: Any, messages: list[dict[str, str]], max_tokens: int
) -> tuple[float, float, float, float, str, int]:
    """Wall and process-CPU seconds to the first piece and to the end (CPU time: what the answer costs
    without the other jobs of a shared machine; with one thread it is the idle-machine wall time)."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    first = first_cpu = 0.0
    pieces: list[str] = []
    for chunk in llama.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0.0, stream=True):
        text = chunk["choices"][0]["delta"].get("content")
        if text:
            if not pieces:
                first = time.perf_counter() - started
                first_cpu = time.process_time() - cpu_started
            pieces.append(text)
    total = time.perf_counter() - started
    total_cpu = time.process_time() - cpu_started
    return first or total, total, first_cpu or total_cpu, total_cpu, "".join(pieces), len(pieces)


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps(run(job)))


if __name__ == "__main__":
    main()
