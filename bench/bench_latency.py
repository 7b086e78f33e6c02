"""Answer latency (#14): where one question's time goes, and first-token / total latency per lever.

LoCoMo, the paper protocol's store (fast construction, cached in bench/cache/stores), palm probes: each
question is asked by its owner (the gate verifies them, retrieval runs in their notes). Questions: the
protocol's 10 % sample (seed 0), drawn category by category (multi-hop, temporal, single-hop in turn) and
conversation by conversation, so the three categories are mixed; deterministic by --seed.

The LLM runs through the kiosk's own backend (kiosk.llm.llamacpp.LlamaCppLLM) in a worker process per
lever (bench/latency_worker.py). `--mode sequential` (the default) runs one lever after the other, one
llama.cpp process at a time, so its wall times are what a terminal would see at that load (the load
average at the start and end of each lever is recorded); `--mode concurrent` runs the levers of a chunk of
questions at the same time (a load change hits all alike, but absolute times are meaningless). Before each
answer the llama context is reset, as it is in the kiosk after the note construction that follows every
answer. Wall time and process CPU time are both recorded.

Levers (baseline: the kiosk's answering prompt with 10 notes and nothing else): 5 notes, the saved KV state of the
system prompt, prefilling the prompt built from the words typed before "send" (retrieval + prefill, timed from
"send"), thread count, batch size, flash attention, an AVX-512/VNNI build of llama.cpp (`--fast-python`), flash
attention on the defaults (the kiosk's defaults since latency_50_flash.md: "compact + KV + prefill while typing +
flash attention") and speculative decoding by prompt lookup on them (answer tokens drafted from the prompt's
n-grams; the 135M model cannot draft for the 0.5B: their vocabularies differ). Owner F1 (LoCoMo token F1, the
protocol's scoring) comes from the same answers. (Earlier runs also timed the former "detailed" and the eval's
"short" prompt, the prefilled notes kept at "send" and the prefilled notes moved in the KV cache: those
experiments are removed, their results stay in bench/results.) `--token-counts` only counts prompt tokens per
variant and how much of the final prompt the typed prompt shares (no generation), cheap enough for many
questions. `--amx-python` (a venv with the bootstrap's "amx" llama.cpp build) runs instead
the defaults on the AVX-512 build against the AMX build with the model requantised to Q8_0 (kiosk.llm.requant),
the same Q8_0 file on the AVX-512 build and the shipped file on the AMX build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import percentiles_ms, table, write_results
from bench.latency_levers import (
    CACHE,
    ROOT,
    TYPING,
    Asked,
    Lever,
    Messages,
    build_contexts,
    levers,
    messages_for,
    typed_words,
)
from bench.latency_report import categories, render, stage_breakdown, summarise
from kiosk.config import KioskConfig, load_config

WORKER = ROOT / "bench" / "latency_worker.py"


# ---- the run --------------------------------------------------------------------------------------


def run_worker(python: str, job: dict[str, Any], work_dir: Path) -> dict[str, Any]:
    job_path = work_dir / "job.json"
    out_path = work_dir / "out.json"
    job_path.write_text(json.dumps(job))
    subprocess.run([python, str(WORKER), str(job_path), str(out_path)], check=True, cwd=ROOT)
    return dict(json.loads(out_path.read_text()))


def worker_job(
    model_path: Path, lever: Lever, part: Sequence[Asked], threads: int, max_tokens: int
) -> tuple[dict[str, Any], list[str]]:
    conditions = ["owner", "non_owner"] if lever.non_owner else ["owner"]
    requests = []
    for condition in conditions:
        for item in part:
            notes, person = (
                (item.owner, item.owner_person) if condition == "owner" else (item.non_owner, item.non_owner_person)
            )
            prefill = None
            if lever.prefill:
                typed = typed_words(item.question.question, lever.prefill)
                prefill = messages_for(lever, typed, item.typed[lever.prefill], person)
            requests.append(
                {"messages": messages_for(lever, item.question.question, notes, person), "prefill": prefill}
            )
    job = {
        "model": str(model_path),
        "llama": {
            "n_ctx": 2048,
            "threads": lever.threads or threads,
            "flash_attn": lever.flash_attn,
            "n_batch": lever.n_batch,
            "prompt_lookup_tokens": lever.prompt_lookup,
        },
        "kv_prefix": lever.kv_prefix,
        "max_tokens": max_tokens,
        "requests": requests,
    }
    return job, conditions


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


Cell = tuple[str, Path, Lever]  # (model name, GGUF path, lever)


def time_levers(
    cells: Sequence[Cell],
    asked: Sequence[Asked],
    pythons: dict[str, str],
    threads: int,
    max_tokens: int,
    chunk: int,
    work_dir: Path,
    say: Callable[[str], None],
    deadline: float,
    sequential: bool,
) -> dict[tuple[str, str], dict[str, Any]]:
    """{(model, lever): {"owner": [per question], "non_owner": [...], "load": [...], "seconds": s}}.

    The questions go in chunks; every chunk is answered by every cell before the next one starts, so when
    the budget (`deadline`, epoch seconds) ends the run early all cells have the same questions, and a load
    change on the shared machine is spread over all of them. Sequential: the cells of a chunk one after the
    other (one llama.cpp process at a time); concurrent: at the same time."""
    out: dict[tuple[str, str], dict[str, Any]] = {
        (model, lever.name): {"owner": [], "non_owner": [], "system_info": [], "load": [], "seconds": 0.0}
        for model, _, lever in cells
    }

    def one(cell: Cell, part: Sequence[Asked], start: int) -> None:
        model, path, lever = cell
        job, conditions = worker_job(path, lever, part, threads, max_tokens)
        cell_dir = work_dir / str(cells.index(cell))
        cell_dir.mkdir(exist_ok=True)
        load_start, began = load_average(), time.time()
        result = run_worker(pythons[lever.build], job, cell_dir)
        entry = out[(model, lever.name)]
        entry["seconds"] += time.time() - began
        entry["load"].append({"start": load_start, "end": load_average()})
        rows = result["results"]
        for i, condition in enumerate(conditions):
            entry[condition].extend(rows[i * len(part) : (i + 1) * len(part)])
        entry["system_info"].append({"text": result["system_info"]})
        say(
            f"{model} · {lever.name}: questions {start + len(part)}/{len(asked)} "
            f"(load {load_start} -> {entry['load'][-1]['end']}, {time.strftime('%H:%M:%S')})"
        )

    for start in range(0, len(asked), chunk):
        if start and time.time() > deadline:
            say(f"budget spent after {start} questions")
            break
        part = asked[start : start + chunk]
        if sequential:
            for cell in cells:
                one(cell, part, start)
        else:
            with ThreadPoolExecutor(max_workers=len(cells)) as pool:
                list(pool.map(lambda cell, part=part, start=start: one(cell, part, start), cells))
    return out


def prompt_token_counts(config: KioskConfig, asked: Sequence[Asked], variants: Sequence[Lever]) -> dict[str, Any]:
    """Prompt tokens per variant for both GGUFs, and how many leading tokens the prompt built from the typed
    words shares with the final one (what a prefill can save). No generation: cheap for many questions."""
    from kiosk.llm.llamacpp import LlamaCppLLM
    from kiosk.models import ModelStore

    models = ModelStore(config.paths.models)
    out: dict[str, Any] = {}
    compact = Lever("compact")
    for model in ("qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"):
        llm = LlamaCppLLM(models.ensure(model), n_ctx=2048, threads=1)

        def tokens(messages: Messages, llm: LlamaCppLLM = llm) -> list[int]:
            return llm.prompt_tokens(messages) or []

        counts: dict[str, list[float]] = {
            lever.name: [len(tokens(messages_for(lever, a.question.question, a.owner, a.owner_person))) for a in asked]
            for lever in variants
        }
        for scenario in TYPING:
            shares, after_send = [], []
            for a in asked:
                final = tokens(messages_for(compact, a.question.question, a.owner, a.owner_person))
                typed = tokens(
                    messages_for(compact, typed_words(a.question.question, scenario), a.typed[scenario], a.owner_person)
                )
                common = next((i for i, (x, y) in enumerate(zip(final, typed, strict=False)) if x != y), len(final))
                shares.append(common / len(final))
                after_send.append(float(len(final) - common))
            counts[f"compact: share of the prompt prefilled, {scenario}"] = shares
            counts[f"compact: tokens to process after send, {scenario}"] = after_send
            counts[f"compact: same notes as the final question, {scenario}"] = [
                float({n.id for n in a.typed[scenario]} == {n.id for n in a.owner}) for a in asked
            ]
        out[model] = {
            name: {
                "p50": statistics.median(values),
                "p95": float(percentiles_ms(values)["p95_ms"]) / 1000.0,
                "mean": round(statistics.fmean(values), 3),
            }
            for name, values in counts.items()
        }
        llm.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=50, help="questions timed per lever")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mixed-category question draw")
    parser.add_argument(
        "--mode",
        default="sequential",
        choices=["sequential", "concurrent"],
        help="one lever (one llama.cpp process) at a time, or the levers of a chunk at the same time",
    )
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads unless the lever says otherwise")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument(
        "--chunk", type=int, default=5, help="questions per worker run; every lever answers a chunk before the next"
    )
    parser.add_argument("--models", default="qwen2.5-coder-0.5b-instruct,smollm2-135m-instruct")
    parser.add_argument("--modality", default="palm", choices=["face", "palm"])
    parser.add_argument("--fast-python", default=None, help="python of a venv with an AVX-512/VNNI llama-cpp-python")
    parser.add_argument(
        "--amx-python", default=None, help="python of a venv with the AMX llama-cpp-python (then: the AMX levers)"
    )
    parser.add_argument("--only", default=None, help="semicolon-separated lever names (default: all)")
    parser.add_argument(
        "--small-levers",
        default="baseline;compact + system KV state;compact + KV + prefill while typing",
        help="levers run for models other than the default GGUF",
    )
    parser.add_argument("--name", default="latency")
    parser.add_argument(
        "--token-counts", action="store_true", help="only count the prompt tokens of each prompt variant (no LLM)"
    )
    parser.add_argument(
        "--budget-min", type=float, default=600.0, help="start no new lever / chunk after this many minutes"
    )
    args = parser.parse_args()

    from kiosk.llm.requant import requantized_model
    from kiosk.models import ModelStore

    config = load_config()
    store = ModelStore(config.paths.models)
    CACHE.mkdir(parents=True, exist_ok=True)  # a fresh clone has no bench/cache yet
    pythons = {
        "portable": sys.executable,
        "avx512": args.fast_python or sys.executable,
        "amx": args.amx_python or sys.executable,
    }
    chosen = levers(args.fast_python, args.amx_python)
    if args.only:
        wanted = {name.strip() for name in args.only.split(";")}
        chosen = [lever for lever in chosen if lever.name in wanted]
    say = print
    started = time.time()
    load_start = load_average()
    if args.token_counts:
        variants = [
            lever for lever in levers(None) if not lever.kv_prefix and not lever.prefill and lever.threads is None
        ]
        with tempfile.TemporaryDirectory(prefix="latency-", dir=CACHE) as tmp:
            asked = build_contexts(config, args.questions, args.modality, Path(tmp), args.seed)
        counts = prompt_token_counts(config, asked, variants)
        rows = [
            [model, name, v["p50"], v["p95"], v["mean"]] for model, per in counts.items() for name, v in per.items()
        ]
        md = (
            f"Prompt tokens of the owner's answer prompt for {len(asked)} LoCoMo questions ({categories(asked)}; "
            "top-10 notes, palm probes), per prompt variant and GGUF tokenizer; and for the compact prompt, the "
            "share of its leading tokens the prompt built from the typed words (and their notes) already holds, "
            f"per typing scenario ({TYPING}).\n\n" + table(["model", "prompt", "p50", "p95", "mean"], rows)
        )
        write_results(f"{args.name}_prompt_tokens", {"questions": len(asked), "prompt_tokens": counts}, md)
        return
    per_model: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="latency-", dir=CACHE) as tmp:
        work_dir = Path(tmp)
        asked = build_contexts(config, args.questions, args.modality, work_dir, args.seed)
        say(f"contexts for {len(asked)} questions ready ({categories(asked)})")
        deadline = started + args.budget_min * 60
        small = {name.strip() for name in args.small_levers.split(";")}
        per_model_levers = {
            model: chosen if model == config.llm.model else [lever for lever in chosen if lever.name in small]
            for model in [m.strip() for m in args.models.split(",")]
        }
        cells = [
            (
                model,
                store.ensure(model) if lever.gguf == "shipped" else requantized_model(store, model, lever.gguf)[0],
                lever,
            )
            for model, model_levers in per_model_levers.items()
            for lever in model_levers
        ]
        timed_cells = time_levers(
            cells,
            asked,
            pythons,
            args.threads,
            args.max_tokens,
            args.chunk,
            work_dir,
            say,
            deadline,
            args.mode == "sequential",
        )
        answered = min(len(entry["owner"]) for entry in timed_cells.values())
        asked = asked[:answered]
        for model, model_levers in per_model_levers.items():
            timed = {lever.name: timed_cells[(model, lever.name)] for lever in model_levers}
            summary = summarise(model, model_levers, timed, asked)
            fastest = min(model_levers, key=lambda lever: summary[lever.name]["first_token_p50_ms"])
            per_model[model] = {
                "levers": summary,
                "stages_baseline": stage_breakdown(asked, timed["baseline"]["owner"], model_levers[0])
                if "baseline" in timed
                else None,
                "stages_all": stage_breakdown(asked, timed[model_levers[-1].name]["owner"], model_levers[-1]),
                "stages_all_lever": model_levers[-1].name,
                "fastest": fastest.name,
                "answers": {name: [row["text"] for row in rows["owner"]] for name, rows in timed.items()},
            }
    figures = {
        "questions": len(asked),
        "seed": args.seed,
        "mode": args.mode,
        "threads": args.threads,
        "max_tokens": args.max_tokens,
        "minutes": round((time.time() - started) / 60, 1),
        "load_average": {"start": load_start, "end": load_average()},
        "categories": categories(asked),
        "question_keys": [a.question.key for a in asked],
        "levers": [lever.__dict__ for lever in chosen],
        "models": per_model,
    }
    write_results(args.name, figures, render(figures))


if __name__ == "__main__":
    main()
