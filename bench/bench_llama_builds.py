"""Prompt processing and generation speed of llama.cpp builds and GGUF types side by side (#14).

Each variant is a llama-cpp-python build (the site directory it is installed in, or this interpreter's own) and a
GGUF file. A variant runs in its own child process (two builds of one library cannot share a process): it loads
the model, then times one prompt of N tokens (the README's text, tokenised by the model) evaluated from an empty
context and M greedy tokens. Repetitions take the variants in turn, so a noisy neighbour hits all of them alike;
medians over repetitions, ratios against the first variant.

    .venv/bin/python -m bench.bench_llama_builds --variant 'avx512, Q4_K_M=-:MODEL.gguf' \
        --variant 'amx, Q8_0=~/.cache/.../site:MODEL-q8_0.gguf' [--prompt-tokens 440] [--reps 5] [--name llama_builds]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import table, write_results

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import json, sys, time
from llama_cpp import Llama, llama_print_system_info
path, prompt_tokens, answer_tokens, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, n_batch=512, n_ubatch=512,
            flash_attn=True, verbose=False)
tokens = llm.tokenize(open(sys.argv[5], encoding="utf-8").read().encode("utf-8"))[:prompt_tokens]
started = time.perf_counter()
llm.eval(tokens)
prompt_s = time.perf_counter() - started
started = time.perf_counter()
answer = []
for _ in range(answer_tokens):
    answer.append(llm.sample(temp=0.0))
    llm.eval([answer[-1]])
answer_s = time.perf_counter() - started
print(json.dumps({"prompt_s": prompt_s, "answer_s": answer_s, "system_info": llama_print_system_info().decode(),
                  "answer": llm.detokenize(answer).decode("utf-8", "replace")}))
"""


def parse_variant(text: str) -> tuple[str, str | None, Path]:
    """'label=SITE:GGUF' (SITE '-' = this interpreter's own llama-cpp-python)."""
    label, _, rest = text.partition("=")
    site, _, gguf = rest.partition(":")
    if not label or not gguf:
        raise SystemExit(f"--variant wants 'label=SITE:GGUF', not {text!r}")
    return label, None if site == "-" else str(Path(site).expanduser()), Path(gguf).expanduser()


def run_once(site: str | None, gguf: Path, prompt_tokens: int, answer_tokens: int, threads: int) -> dict[str, Any]:
    env = dict(os.environ)
    if site:
        env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
    argv = [sys.executable, "-c", WORKER, str(gguf), str(prompt_tokens), str(answer_tokens), str(threads)]
    result = subprocess.run(
        [*argv, str(ROOT / "README.md")], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"variant {gguf.name} failed (exit {result.returncode}): {result.stderr[-500:]}")
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", action="append", required=True, help="label=SITE:GGUF (SITE '-': this venv)")
    parser.add_argument("--prompt-tokens", type=int, default=440, help="prompt length (the issue's 10 notes)")
    parser.add_argument("--answer-tokens", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--name", default="llama_builds")
    args = parser.parse_args()
    variants = [parse_variant(text) for text in args.variant]
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in variants}
    for rep in range(args.reps):
        for label, site, gguf in variants:
            runs[label].append(run_once(site, gguf, args.prompt_tokens, args.answer_tokens, args.threads))
            print(rep, label, round(runs[label][-1]["prompt_s"], 3), flush=True)
    first = variants[0][0]
    base = statistics.median(run["prompt_s"] for run in runs[first])
    figures: dict[str, Any] = {"threads": args.threads, "reps": args.reps, "variants": {}}
    rows = []
    for label, _site, gguf in variants:
        prompt_s = statistics.median(run["prompt_s"] for run in runs[label])
        answer_s = statistics.median(run["answer_s"] for run in runs[label])
        info = runs[label][0]["system_info"]
        compiled = [part.split("=")[0].strip() for part in info.split("|") if part.strip().endswith("= 1")]
        figures["variants"][label] = {
            "gguf": gguf.name,
            "gguf_mb": round(gguf.stat().st_size / 1e6, 1),
            "llama_build": compiled,
            f"prompt_{args.prompt_tokens}_tokens.p50_s": round(prompt_s, 3),
            "prompt.tokens_per_s": round(args.prompt_tokens / prompt_s, 1),
            "prompt.ratio_to_first": round(prompt_s / base, 3),
            f"answer_{args.answer_tokens}_tokens.p50_s": round(answer_s, 3),
            "answer.tokens_per_s": round(args.answer_tokens / answer_s, 1),
            "answer_text": runs[label][0]["answer"],
            "raw_prompt_s": [round(run["prompt_s"], 4) for run in runs[label]],
        }
        v = figures["variants"][label]
        rows.append(
            [
                label,
                gguf.name,
                v["gguf_mb"],
                v[f"prompt_{args.prompt_tokens}_tokens.p50_s"],
                v["prompt.tokens_per_s"],
                v["prompt.ratio_to_first"],
                v["answer.tokens_per_s"],
                " ".join(c for c in compiled if c.startswith(("AVX512", "AMX"))) or "AVX2",
            ]
        )
    body = (
        f"A {args.prompt_tokens}-token prompt from an empty context and {args.answer_tokens} greedy tokens, "
        f"{args.threads} threads, flash attention on, each variant in its own process, the variants in turn, "
        f"median of {args.reps} repetitions.\n\n"
        + table(
            [
                "variant",
                "GGUF",
                "MB",
                "prompt p50 s",
                "prompt tokens/s",
                f"prompt time vs {first}",
                "answer tokens/s",
                "AVX-512 / AMX compiled in",
            ],
            rows,
        )
    )
    write_results(args.name, figures, body)


if __name__ == "__main__":
    main()
