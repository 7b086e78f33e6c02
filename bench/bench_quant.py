"""Prompt processing and generation speed of the default GGUF requantised to other llama.cpp types (#14).

Prompt processing is most of the first-token time on a CPU, and llama.cpp's CPU backend repacks some types
(Q4_0, Q8_0) into layouts its AVX-512/VNNI kernels process faster than Q4_K. The kiosk's only 0.5B file is
Q4_K_M, so the variants are derived from it with `llama_model_quantize` (allow_requantize: the weights are
rounded twice) and cached in bench/cache/quant. Timing: one prompt of N tokens (the README's text, tokenised
by the model) evaluated from an empty context, then M greedy tokens, every variant in turn per repetition,
all models loaded once; medians over repetitions, ratios against the shipped file. Owner F1 of a variant comes
from `kiosk eval locomo --llm FILE` and `bench.bench_paired` (the command is in the results note).

    .venv/bin/python -m bench.bench_quant [--types q8_0,q4_0] [--prompt-tokens 440] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import table, write_results
from kiosk.config import load_config
from kiosk.llm.cpu_support import built_for, verified_llama_build
from kiosk.llm.requant import requantize
from kiosk.models import ModelStore

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "cache" / "quant"


def requantized(source: Path, kind: str) -> Path:
    """`source` requantised to llama.cpp type `kind` (e.g. q8_0), made once and cached."""
    target = CACHE / f"{source.stem}.requant-{kind}.gguf"
    if target.is_file():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    requantize(source, partial, kind)
    partial.rename(target)
    return target


def time_variants(files: dict[str, Path], prompt_tokens: int, answer_tokens: int, reps: int) -> dict[str, Any]:
    from llama_cpp import Llama

    models = {
        name: Llama(
            model_path=str(path), n_ctx=2048, n_threads=2, n_threads_batch=2, n_batch=512, n_ubatch=512, verbose=False
        )
        for name, path in files.items()
    }
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tokens = next(iter(models.values())).tokenize(text.encode("utf-8"))[:prompt_tokens]
    times: dict[str, dict[str, list[float]]] = {name: {"prompt": [], "answer": []} for name in files}
    for _ in range(reps):
        for name, llm in models.items():
            llm.reset()
            started = time.perf_counter()
            llm.eval(tokens)
            times[name]["prompt"].append(time.perf_counter() - started)
            started = time.perf_counter()
            for _ in range(answer_tokens):
                llm.eval([llm.sample(temp=0.0)])
            times[name]["answer"].append(time.perf_counter() - started)
    for llm in models.values():
        llm.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", default="q8_0,q4_0", help="llama.cpp types to requantise to")
    parser.add_argument("--prompt-tokens", type=int, default=440, help="prompt length (the issue's 10 notes)")
    parser.add_argument("--answer-tokens", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--name", default="quant")
    args = parser.parse_args()

    config = load_config()
    source = ModelStore(config.paths.models).ensure(config.llm.model)
    files = {"q4_k_m (shipped)": source}
    for kind in [k.strip() for k in args.types.split(",") if k.strip()]:
        files[f"{kind} (requantised)"] = requantized(source, kind)
    times = time_variants(files, args.prompt_tokens, args.answer_tokens, args.reps)
    base = statistics.median(times["q4_k_m (shipped)"]["prompt"])
    variants = {}
    for name, path in files.items():
        prompt_s = statistics.median(times[name]["prompt"])
        answer_s = statistics.median(times[name]["answer"])
        variants[name] = {
            "file": path.name,
            "size_mb": round(path.stat().st_size / 1e6, 1),
            f"prompt_{args.prompt_tokens}_tokens.p50_s": round(prompt_s, 3),
            "prompt.tokens_per_s": round(args.prompt_tokens / prompt_s, 1),
            "prompt.ratio_to_shipped": round(prompt_s / base, 2),
            f"answer_{args.answer_tokens}_tokens.p50_s": round(answer_s, 3),
            "answer.tokens_per_s": round(args.answer_tokens / answer_s, 1),
        }
    figures = {
        "model": config.llm.model,
        "llama_build": built_for(verified_llama_build()),
        "threads": 2,
        "reps": args.reps,
        "variants": variants,
        "raw_seconds": times,
    }
    rows = [
        [
            name,
            v["size_mb"],
            v[f"prompt_{args.prompt_tokens}_tokens.p50_s"],
            v["prompt.tokens_per_s"],
            v["prompt.ratio_to_shipped"],
            v["answer.tokens_per_s"],
        ]
        for name, v in variants.items()
    ]
    md = (
        f"{config.llm.model}, llama.cpp build {', '.join(figures['llama_build'] or [])}, 2 threads; a "
        f"{args.prompt_tokens}-token prompt from an empty context and {args.answer_tokens} greedy tokens, "
        f"median of {args.reps} repetitions, the variants in turn.\n\n"
        + table(
            ["GGUF type", "MB", "prompt p50 s", "prompt tokens/s", "prompt time vs shipped", "answer tokens/s"], rows
        )
    )
    write_results(args.name, figures, md)


if __name__ == "__main__":
    main()
