"""Pooled LoCoMo figures over several `kiosk eval locomo` runs on disjoint question sets (#9).

One 144-question sample has a standard error of about 3 F1 points, so the fresh-question estimate pools the
held-out runs: every answer of every run in one set per condition, per-category means and their macro average
(the paper's "Average", kiosk.eval.metrics.aggregate), Avg. Gap = Owner - Non-owner, and a bootstrap interval
(questions resampled within each category, 2,000 draws, fixed seed). A question two runs drew counts once,
with the first run's answers.

    .venv/bin/python -m bench.bench_pooled --name NAME --run label=results.json [--run ...] [--note TEXT]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bench.common import table, write_results
from kiosk.eval.metrics import CATEGORY_NAMES, Scored, aggregate

CATEGORY_IDS = {name: number for number, name in CATEGORY_NAMES.items()}
CONDITIONS = ("owner", "non_owner", "no_memory")
DRAWS = 2000


def load_runs(specs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    runs = []
    for spec in specs:
        label, _, path = spec.partition("=")
        if not path:
            raise SystemExit(f"--run {spec!r}: give label=results.json")
        runs.append((label, json.loads(Path(path).read_text(encoding="utf-8"))))
    seen: set[str] = set()
    for _, run in runs:  # a question drawn by two seeds counts once, with the first run's answers
        run["answers"] = [a for a in run["answers"] if a["key"] not in seen]
        seen.update(a["key"] for a in run["answers"])
    return runs


def scored(runs: list[tuple[str, dict[str, Any]]], condition: str) -> list[Scored]:
    return [
        Scored(CATEGORY_IDS[answer["category"]], answer[condition]["f1"], answer[condition]["bleu1"])
        for _, run in runs
        for answer in run["answers"]
        if condition in answer and "f1" in answer[condition]
    ]


def bootstrap(owner: list[Scored], non_owner: list[Scored], seed: int = 0) -> dict[str, list[float]]:
    """95 % intervals of the owner average and the gap, resampling question indices within each category
    (owner and non-owner answers of a question stay paired)."""
    rng = random.Random(seed)
    by_category: dict[int, list[int]] = {}
    for index, item in enumerate(owner):
        by_category.setdefault(item.category, []).append(index)
    owner_values, gap_values = [], []
    for _ in range(DRAWS):
        picked = [rng.choice(indices) for indices in by_category.values() for _ in indices]
        owner_avg = aggregate(owner[i] for i in picked).average_f1
        owner_values.append(owner_avg)
        if non_owner:
            gap_values.append(owner_avg - aggregate(non_owner[i] for i in picked).average_f1)

    def interval(values: list[float]) -> list[float]:
        ordered = sorted(values)
        return [round(ordered[int(0.025 * len(ordered))], 2), round(ordered[int(0.975 * len(ordered)) - 1], 2)]

    return {"owner_f1": interval(owner_values), "gap_f1": interval(gap_values) if gap_values else []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--run", action="append", required=True, help="label=results.json, in order of precedence")
    parser.add_argument("--note", default="", help="a sentence on how the runs were made, printed under the table")
    args = parser.parse_args()
    runs = load_runs(args.run)
    rows, per_run = [], []
    for label, run in runs:
        conditions = run["conditions"]
        owner = (conditions.get("owner") or {}).get("scores") or {}
        non_owner = (conditions.get("non_owner") or {}).get("scores") or {}
        per_run.append(
            {
                "label": label,
                "questions": run["counts"]["questions"],
                "questions_not_in_earlier_runs": len(run["answers"]),
                "owner_f1": owner.get("average", {}).get("f1"),
                "non_owner_f1": non_owner.get("average", {}).get("f1"),
                "gap_f1": run.get("gap", {}).get("f1"),
                "command": run.get("command"),
            }
        )
    pooled: dict[str, Any] = {}
    for condition in CONDITIONS:
        items = scored(runs, condition)
        if items:
            scores = aggregate(items)
            pooled[condition] = {
                "answers": len(items),
                "average_f1": round(scores.average_f1, 2),
                "average_bleu1": round(scores.average_bleu1, 2),
                "per_category_f1": {CATEGORY_NAMES[c]: round(v, 2) for c, v in sorted(scores.f1.items())},
            }
    owner_items, non_owner_items = scored(runs, "owner"), scored(runs, "non_owner")
    if "owner" in pooled and "non_owner" in pooled:
        pooled["gap_f1"] = round(pooled["owner"]["average_f1"] - pooled["non_owner"]["average_f1"], 2)
    pooled["bootstrap_95"] = bootstrap(owner_items, non_owner_items if len(non_owner_items) == len(owner_items) else [])
    for entry in per_run:
        rows.append(
            [
                entry["label"],
                entry["questions"],
                entry["questions_not_in_earlier_runs"],
                entry["owner_f1"],
                entry["non_owner_f1"],
                entry["gap_f1"],
            ]
        )
    rows.append(
        [
            "pooled",
            len(owner_items),
            len(owner_items),
            pooled.get("owner", {}).get("average_f1"),
            pooled.get("non_owner", {}).get("average_f1"),
            pooled.get("gap_f1"),
        ]
    )
    interval = pooled["bootstrap_95"]
    md = (
        "Owner / Non-owner macro-average F1 per run (as the run reported it) and pooled over all their answers, a "
        "question drawn by two runs counted once (first run's answers).\n\n"
        + table(["run", "questions", "new questions", "owner F1", "non-owner F1", "Avg. Gap (F1)"], rows)
        + f"\n\nPooled per category (owner): {pooled.get('owner', {}).get('per_category_f1')}; non-owner: "
        f"{pooled.get('non_owner', {}).get('per_category_f1')}; no memory: "
        f"{pooled.get('no_memory', {}).get('average_f1')}. Bootstrap 95 % interval (questions resampled within "
        f"category, {DRAWS} draws): owner {interval['owner_f1']}, gap {interval['gap_f1']}.\n\n"
        + "\n".join(f"- {entry['label']}: `{entry['command']}`" for entry in per_run)
        + (f"\n\n{args.note}" if args.note else "")
    )
    write_results(args.name, {"runs": per_run, "pooled": pooled}, md)


if __name__ == "__main__":
    main()
