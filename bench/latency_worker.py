"""Times answers through the kiosk's own llama.cpp backend (kiosk.llm.llamacpp.LlamaCppLLM), one process per
lever: `python bench/latency_worker.py job.json result.json` (run by bench_latency).

A job: {"model": path, "llama": {"n_ctx", "threads", "flash_attn", "n_batch", "prompt_lookup_tokens"},
"kv_prefix": bool, "max_tokens": int, "requests": [{"messages": [...], "prefill": [...] | null}]}. Before
every request the llama context is reset, as it is in the kiosk after the note construction that follows each
answer; with kv_prefix the system prompts' KV state was saved at start-up (LlamaCppLLM.warm_up) and is
restored, as in the kiosk. A request's "prefill" (the prompt built from the words typed before the question
was sent) is evaluated untimed first with LlamaCppLLM.prefill; the timed part starts at "send". One short
untimed request first, so no lever pays for paging the weights in.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def run(job: dict[str, Any]) -> dict[str, Any]:
    from kiosk.llm.llamacpp import LlamaCppLLM

    settings = job["llama"]
    started = time.perf_counter()
    llm = LlamaCppLLM(
        Path(job["model"]),
        n_ctx=settings["n_ctx"],
        threads=settings["threads"],
        flash_attn=settings.get("flash_attn", False),
        n_batch=settings.get("n_batch", 512),
        reuse_system_prompt=bool(job.get("kv_prefix")),
        prompt_lookup_tokens=settings.get("prompt_lookup_tokens", 0),
    )
    load_s = time.perf_counter() - started
    requests = job["requests"]
    if job.get("kv_prefix"):
        llm.warm_up(sorted({r["messages"][0]["content"] for r in requests if r["messages"][0]["role"] == "system"}))
    list(llm.stream([{"role": "user", "content": "Hello"}], max_tokens=2))  # untimed: pages the weights in
    results = []
    for request in requests:
        llm._llama.reset()  # the note construction after each kiosk answer replaces the context
        prefill_started, prefill_cpu_started = time.perf_counter(), time.process_time()
        prefilled = llm.prefill(request["prefill"]) if request.get("prefill") else 0
        prefill_s, prefill_cpu_s = time.perf_counter() - prefill_started, time.process_time() - prefill_cpu_started
        tokens = llm.prompt_tokens(request["messages"]) or []
        reused = _reused(llm, tokens, bool(job.get("kv_prefix")))
        timed = _timed_stream(llm, request["messages"], job["max_tokens"])
        results.append(
            {
                **timed,
                "prompt_tokens": len(tokens),
                "prefilled_tokens": prefilled,
                "prefill_s": prefill_s,
                "prefill_cpu_s": prefill_cpu_s,
                "reused_tokens": reused,
            }
        )
    info = llama_system_info()
    llm.close()
    return {"load_s": load_s, "system_info": info, "results": results}


def _reused(llm: Any, tokens: list[int], kv_prefix: bool) -> int:
    """Prompt tokens already in the context at "send" (the saved system prompt counts when it is kept)."""
    from kiosk.llm.llamacpp import common_prefix_length

    common = common_prefix_length(llm._evaluated(), tokens)
    if common == 0 and kv_prefix and tokens:
        system = llm._system_tokens.values()
        return max((len(s) for s in system if tokens[: len(s)] == s), default=0)
    return common


def llama_system_info() -> str:
    import llama_cpp

    return str(llama_cpp.llama_print_system_info().decode())


def _timed_stream(llm: Any, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    """Wall and process-CPU seconds to the first piece and to the end."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    first = first_cpu = 0.0
    pieces: list[str] = []
    for piece in llm.stream(messages, max_tokens=max_tokens, temperature=0.0):
        if not pieces:
            first = time.perf_counter() - started
            first_cpu = time.process_time() - cpu_started
        pieces.append(piece)
    total = time.perf_counter() - started
    total_cpu = time.process_time() - cpu_started
    return {
        "first_token_s": first or total,
        "total_s": total,
        "first_token_cpu_s": first_cpu or total_cpu,
        "total_cpu_s": total_cpu,
        "completion_tokens": len(pieces),
        "text": "".join(pieces),
    }


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps(run(job)))


if __name__ == "__main__":
    main()
