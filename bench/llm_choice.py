"""Pick the default answering LLM from LoCoMo runs: Owner-context F1 against seconds per answer.

Inputs are `kiosk eval locomo` results of the same question subset, one per model. The rule: the
model with the best Owner F1 whose median answer latency fits the budget; ties go to the faster one.

    .venv/bin/python -m bench.llm_choice bench/results/locomo_face_*.json [--budget-s 5]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import RESULTS, command_line
from kiosk.errors import DataError
from kiosk.eval.report import write_atomically


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _row(path: Path) -> dict[str, Any]:
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read results {path} ({exc})", "give locomo_*.json files") from exc
    conditions = results["conditions"]
    if "owner" not in conditions:
        raise DataError(f"{path} has no Owner condition", "run `kiosk eval locomo` with the owner condition")
    keys = [answer["key"] for answer in results["answers"]]
    gold = conditions.get("gold_evidence")
    return {
        "model": results["llm"]["name"],
        "sha256": results["llm"]["sha256"],
        "file": path.name,
        "questions": len(keys),
        "question_keys": keys,
        "owner_f1": conditions["owner"]["scores"]["average"]["f1"],
        "owner_bleu1": conditions["owner"]["scores"]["average"]["bleu1"],
        "owner_per_category_f1": {k: v["f1"] for k, v in conditions["owner"]["scores"]["per_category"].items()},
        "gold_f1": gold["scores"]["average"]["f1"] if gold else None,
        "gap_f1": results["gap"]["f1"],
        "answers_generated": results["llm"]["generated"],
        "p50_s": results["llm"]["p50_s"],
        "p95_s": results["llm"]["p95_s"],
        "prompt": results.get("prompt"),
    }


def choose(rows: Sequence[dict[str, Any]], budget_s: float) -> dict[str, Any]:
    fitting = [row for row in rows if row["p50_s"] <= budget_s] or list(rows)
    best = max(fitting, key=lambda row: (round(row["owner_f1"], 1), -row["p50_s"]))
    return best


def write_llm_choice(
    result_files: Sequence[Path], output_dir: Path, budget_s: float, command: str, machine_note: str
) -> dict[str, Any]:
    if len(result_files) < 2:
        raise DataError("an LLM choice needs results of two or more models", "pass several locomo_*.json files")
    rows = [_row(path) for path in result_files]
    subsets = {tuple(row["question_keys"]) for row in rows}
    if len(subsets) != 1:
        raise DataError("the results do not cover the same questions", "run every model with the same options")
    chosen = choose(rows, budget_s)
    payload = {
        "benchmark": "locomo",
        "rule": f"best Owner F1 with median answer latency <= {budget_s} s (ties: faster)",
        "chosen": chosen["model"],
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "machine": machine_note,
        "models": [{k: v for k, v in row.items() if k != "question_keys"} for row in rows],
        "metrics": {f"locomo.llm_choice.{row['model']}.owner.f1": row["owner_f1"] for row in rows}
        | {f"locomo.llm_choice.{row['model']}.answer.p50_s": row["p50_s"] for row in rows},
    }
    lines = [
        "# Default answering LLM: LoCoMo Owner F1 vs latency",
        "",
        f"Command: `{command}`",
        "",
        f"Date: {payload['date']} · Machine: {machine_note}",
        "",
        f"Same {rows[0]['questions']} questions for every model, Owner condition (verified probe, K = 10), "
        f"prompt `{rows[0]['prompt']}`; latency = seconds per uncached answer in that run.",
        "",
        "| model | Owner F1 | Owner BLEU-1 | single-hop | multi-hop | temporal | Gold-evidence F1 | Gap | p50 s"
        " | p95 s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        per = row["owner_per_category_f1"]
        gold = "–" if row["gold_f1"] is None else f"{row['gold_f1']:.2f}"
        gap = "–" if row["gap_f1"] is None else f"{row['gap_f1']:.2f}"
        lines.append(
            f"| {row['model']} | {row['owner_f1']:.2f} | {row['owner_bleu1']:.2f} | "
            f"{_cell(per.get('single-hop'))} | {_cell(per.get('multi-hop'))} | {_cell(per.get('temporal'))} | "
            f"{gold} | {gap} | {row['p50_s']:.2f} | {row['p95_s']:.2f} |"
        )
    lines += ["", f"Rule: {payload['rule']}. **Chosen: {chosen['model']}.**", ""]
    output_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(output_dir / "llm_choice.json", json.dumps(payload, indent=2) + "\n")
    write_atomically(output_dir / "llm_choice.md", "\n".join(lines))
    return payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="locomo_*.json of the same subset, one per model")
    parser.add_argument("--budget-s", type=float, default=5.0, help="largest acceptable median seconds per answer")
    parser.add_argument("--output", type=Path, default=RESULTS, help="directory (default bench/results)")
    parser.add_argument("--machine", default="2 shared cores", help="machine note for the report")
    args = parser.parse_args()
    payload = write_llm_choice(args.results, args.output, args.budget_s, command_line(), args.machine)
    print(f"chosen: {payload['chosen']} ({payload['rule']})")


if __name__ == "__main__":
    main()
