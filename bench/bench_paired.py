"""Paired comparison of `kiosk eval locomo` runs that answered the same questions in one condition.

A change that should not change answers (another llama.cpp build, the prefilled notes kept in another order)
changes a few of them; the mean F1 of 144 questions then moves by about a point either way. This compares
answer by answer: how many predictions changed, how many of those scored better or worse, the two-sided
sign test on them, and F1 per category. Each run is named by the file its `kiosk eval locomo` wrote, and
its command is quoted from it.

    .venv/bin/python -m bench.bench_paired --name NAME --condition owner \
        --pair "portable=bench/results/A.json;AVX-512 build=bench/results/B.json" --pair "..."

Each --pair is one question set: the first run is the reference, the others are compared with it.
`--read RUN.json` (repeatable) names runs whose answers were read while designing the change: each set is
then compared a second time on only the questions none of those runs answered.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from bench.common import table, write_results

EPSILON = 1e-3


def sign_test_p(better: int, worse: int) -> float:
    """Two-sided exact binomial test of better vs worse at p = 0.5 (ties left out)."""
    trials = better + worse
    if trials == 0:
        return 1.0
    tail = sum(math.comb(trials, k) for k in range(min(better, worse) + 1)) / 2**trials
    return min(1.0, 2 * tail)


def load(path: Path) -> dict[str, Any]:
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return results


def compare(
    reference: dict[str, Any], variant: dict[str, Any], condition: str, left_out: frozenset[str] = frozenset()
) -> dict[str, Any]:
    keys = [row["key"] for row in reference["answers"]]
    if keys != [row["key"] for row in variant["answers"]]:
        raise SystemExit("the runs did not answer the same questions in the same order")
    if left_out:
        return compare(_without(reference, left_out), _without(variant, left_out), condition)
    changed = better = worse = 0
    for before, after in zip(reference["answers"], variant["answers"], strict=True):
        if before[condition]["prediction"] == after[condition]["prediction"]:
            continue
        changed += 1
        difference = after[condition]["f1"] - before[condition]["f1"]
        better += difference > EPSILON
        worse += difference < -EPSILON
    scores = variant["conditions"][condition]["scores"]
    return {
        "questions": len(keys),
        "f1": scores["average"]["f1"],
        "f1_per_category": {name: value["f1"] for name, value in scores["per_category"].items()},
        "f1_change": round(scores["average"]["f1"] - reference["conditions"][condition]["scores"]["average"]["f1"], 2),
        "changed_answers": changed,
        "better": better,
        "worse": worse,
        "sign_test_p": round(sign_test_p(better, worse), 3),
    }


def _without(run: dict[str, Any], left_out: frozenset[str]) -> dict[str, Any]:
    """`run` with only the questions outside `left_out`, its per-category and average F1 recomputed."""
    from bench.bench_pooled import scored
    from kiosk.eval.metrics import aggregate

    answers = [row for row in run["answers"] if row["key"] not in left_out]
    conditions: dict[str, Any] = {}
    for condition in run["conditions"]:
        if items := scored([("", {"answers": answers})], condition):
            conditions[condition] = {"scores": aggregate(items).as_dict()}
    return {**run, "answers": answers, "conditions": conditions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--condition", default="owner")
    parser.add_argument("--pair", action="append", required=True, help="label=results.json;label=results.json;...")
    parser.add_argument("--note", default="", help="a sentence on how the runs were made, printed under the tables")
    parser.add_argument("--read", action="append", default=[], help="a run whose answers were read (repeatable)")
    args = parser.parse_args()
    read = frozenset(row["key"] for path in args.read for row in load(Path(path))["answers"])

    sets: list[dict[str, Any]] = []
    for pair in args.pair:
        runs = [(label.strip(), Path(path.strip())) for label, path in (item.split("=", 1) for item in pair.split(";"))]
        (reference_label, reference_path), *variants = runs
        reference = load(reference_path)
        questions = f"seed {reference['seed']}" + (
            " held-out" if reference.get("questions_held_out_from_seed") is not None else " sample"
        )
        for subset, left_out in [("", frozenset[str]()), (", unread questions only", read)][: 2 if read else 1]:
            if all(row["key"] in left_out for row in reference["answers"]):
                continue  # every question was read
            compared = {reference_label: compare(reference, reference, args.condition, left_out)}
            for label, path in variants:
                compared[label] = compare(reference, load(path), args.condition, left_out)
            sets.append(
                {
                    "questions": questions + subset,
                    "reference": reference_label,
                    "runs": compared,
                    "files": {label: str(path) for label, path in runs},
                    "commands": {label: load(path)["command"] for label, path in runs},
                }
            )
    lines: list[str] = []
    for entry in sets:
        headers = ["run", "questions", f"{args.condition} F1", "change", "per category", "changed answers"]
        headers += ["better", "worse", "sign test p"]
        rows = [
            [
                label,
                f"{entry['questions']} ({run['questions']})",
                f"{run['f1']:.2f}",
                f"{run['f1_change']:+.2f}",
                ", ".join(f"{name} {value}" for name, value in run["f1_per_category"].items()),
                run["changed_answers"],
                run["better"],
                run["worse"],
                run["sign_test_p"],
            ]
            for label, run in entry["runs"].items()
        ]
        lines += [f"## {entry['questions']}, against {entry['reference']}", "", table(headers, rows), ""]
        lines += [f"- {label}: `{command}` → `{entry['files'][label]}`" for label, command in entry["commands"].items()]
        lines.append("")
    body = (
        f"Answer-by-answer comparison in the {args.condition} condition: a changed answer is a different "
        "prediction for the same question; better / worse = its F1 rose / fell; the sign test asks whether "
        "better vs worse differs from a coin toss (two-sided, ties left out).\n\n"
        + "\n".join(lines)
        + (f"\n\n{args.note}" if args.note else "")
    )
    write_results(args.name, {"condition": args.condition, "read_runs": args.read, "sets": sets}, body)


if __name__ == "__main__":
    main()
