"""The latency bench's report: per-lever summaries of the timed answers (latency percentiles, owner F1),
the per-stage breakdown of the answer path, the question categories and the markdown rendering of the
figures, for bench/bench_latency.py."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from bench.common import percentiles_ms, table
from bench.latency_levers import Asked, Lever, messages_for
from kiosk.eval.answering import clean_answer
from kiosk.eval.metrics import CATEGORY_NAMES, aggregate, score_answer


def f1_scores(rows: Sequence[dict[str, Any]], asked: Sequence[Asked]) -> dict[str, Any]:
    scored = [
        score_answer(clean_answer(row["text"]), item.question.answer, item.question.category)
        for row, item in zip(rows, asked, strict=False)
    ]
    return aggregate(scored).as_dict()


def f1_of(rows: Sequence[dict[str, Any]], asked: Sequence[Asked]) -> float:
    return float(f1_scores(rows, asked)["average"]["f1"])


def summarise(
    model: str, chosen: Sequence[Lever], timed: dict[str, dict[str, Any]], asked: Sequence[Asked]
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for lever in chosen:
        rows = timed[lever.name]["owner"]
        first = percentiles_ms([r["first_token_s"] for r in rows])
        total = percentiles_ms([r["total_s"] for r in rows])
        first_cpu = percentiles_ms([r["first_token_cpu_s"] for r in rows])
        total_cpu = percentiles_ms([r["total_cpu_s"] for r in rows])
        entry = {
            "first_token_cpu_p50_ms": round(first_cpu["p50_ms"], 1),
            "first_token_cpu_p95_ms": round(first_cpu["p95_ms"], 1),
            "total_cpu_p50_ms": round(total_cpu["p50_ms"], 1),
            "total_cpu_p95_ms": round(total_cpu["p95_ms"], 1),
            "first_token_p50_ms": round(first["p50_ms"], 1),
            "first_token_p95_ms": round(first["p95_ms"], 1),
            "total_p50_ms": round(total["p50_ms"], 1),
            "total_p95_ms": round(total["p95_ms"], 1),
            "prompt_tokens_p50": statistics.median(r["prompt_tokens"] for r in rows),
            "answer_pieces_p50": statistics.median(r["completion_tokens"] for r in rows),
            "reused_tokens_p50": statistics.median(r.get("reused_tokens", 0) for r in rows),
            "prefill_while_typing_p50_ms": round(statistics.median(r.get("prefill_s", 0.0) for r in rows) * 1000, 1),
            "questions": len(rows),
            "owner_f1": round(f1_of(rows, asked), 2),
            "owner_f1_per_category": {
                name: value["f1"] for name, value in f1_scores(rows, asked)["per_category"].items()
            },
            "per_question": [
                {
                    key: row.get(key)
                    for key in ("first_token_s", "total_s", "prompt_tokens", "reused_tokens", "prefill_s")
                }
                for row in rows
            ],
            "load": timed[lever.name]["load"],
            "minutes": round(timed[lever.name]["seconds"] / 60, 1),
            "build": timed[lever.name]["system_info"][0]["text"],
        }
        if timed[lever.name]["non_owner"]:
            entry["non_owner_f1"] = round(f1_of(timed[lever.name]["non_owner"], asked), 2)
            entry["gap_f1"] = round(entry["owner_f1"] - entry["non_owner_f1"], 2)
        summary[lever.name] = entry
    return summary


def stage_breakdown(asked: Sequence[Asked], timed_compact: Sequence[dict[str, Any]], lever: Lever) -> dict[str, float]:
    """Per-stage medians (ms) of the answer path under `lever`: probe, gate, retrieval, prompt, LLM."""
    build_ms = []
    for item in asked:
        started = time.perf_counter()
        messages_for(lever, item.question.question, item.owner, item.owner_person)
        build_ms.append((time.perf_counter() - started) * 1000.0)
    first = [r["first_token_s"] * 1000.0 for r in timed_compact]
    generation = [(r["total_s"] - r["first_token_s"]) * 1000.0 for r in timed_compact]
    return {
        "probe_ms": round(statistics.median(a.stages_ms["probe"] for a in asked), 2),
        "gate_ms": round(statistics.median(a.stages_ms["gate"] for a in asked), 2),
        "retrieval_ms": round(
            statistics.median(a.stages_ms.get("encode", 0.0) + a.stages_ms.get("retrieve", 0.0) for a in asked), 2
        ),
        "prompt_build_ms": round(statistics.median(build_ms), 3),
        "prompt_processing_ms": round(statistics.median(first), 1),
        "generation_ms": round(statistics.median(generation), 1),
    }


def categories(asked: Sequence[Asked]) -> dict[str, int]:
    return {
        CATEGORY_NAMES[c]: sum(1 for a in asked if a.question.category == c)
        for c in sorted({a.question.category for a in asked})
    }


def render(figures: dict[str, Any]) -> str:
    how = (
        "one lever after the other, one llama.cpp process at a time (sequential mode)"
        if figures["mode"] == "sequential"
        else "the levers of a chunk of questions at the same time (concurrent mode: absolute times are not a "
        "terminal's, compare ratios)"
    )
    parts = [
        f"{figures['questions']} LoCoMo questions (the protocol's 10 % sample, seed 0, drawn category by category "
        f"with seed {figures['seed']}: {figures['categories']}), palm probes, retrieval K = 10; llama.cpp through "
        f"the kiosk's backend with {figures['threads']} threads unless the lever says otherwise, greedy, at most "
        f"{figures['max_tokens']} answer tokens; the llama context reset before each answer (as after the note "
        f"construction that follows each kiosk answer); {how}. Took {figures['minutes']} min; load average "
        f"(1 min) {figures['load_average']['start']} at the start, {figures['load_average']['end']} at the end, per "
        'lever in the last column. Times are from "send" to the first piece of the answer and to its end, '
        'wall clock and process CPU (CPU sums both threads). "Prefill while typing": retrieval and prompt '
        'prefill for the words typed at the last pause before "send" ran untimed first; "reused" = prompt '
        'tokens already in the context at "send". Prompt processing = time to the first piece (it includes one '
        "decode step); generation = the rest.",
    ]
    for model, result in figures["models"].items():
        rows = []
        for name, entry in result["levers"].items():
            loads = entry["load"]
            rows.append(
                [
                    name,
                    entry["first_token_p50_ms"],
                    entry["first_token_p95_ms"],
                    entry["total_p50_ms"],
                    entry["total_p95_ms"],
                    entry["first_token_cpu_p50_ms"],
                    entry["total_cpu_p50_ms"],
                    entry["prompt_tokens_p50"],
                    entry["reused_tokens_p50"],
                    entry["prefill_while_typing_p50_ms"],
                    entry["answer_pieces_p50"],
                    entry["questions"],
                    entry["owner_f1"],
                    ", ".join(f"{k} {v}" for k, v in entry["owner_f1_per_category"].items()),
                    f"{loads[0]['start']} -> {loads[-1]['end']}",
                ]
            )
        parts.append(f"## {model}")
        parts.append(
            table(
                [
                    "lever",
                    "first token p50 ms (wall)",
                    "p95",
                    "total p50 ms (wall)",
                    "p95",
                    "first token p50 ms (CPU)",
                    "total p50 ms (CPU)",
                    "prompt tokens p50",
                    "reused p50",
                    "prefill before send p50 ms (wall)",
                    "answer pieces p50",
                    "questions",
                    "owner F1",
                    "owner F1 per category",
                    "load",
                ],
                rows,
            )
        )
        last = result.get("stages_all_lever", "all together")
        for label, key in (("baseline", "stages_baseline"), (last, "stages_all")):
            stages = result.get(key)
            if stages:
                parts.append(f"Stages, {label} (medians, ms): " + ", ".join(f"{k} {v}" for k, v in stages.items()))
        parts.append(f"Fastest first token: {result['fastest']}.")
    return "\n\n".join(parts)
