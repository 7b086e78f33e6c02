"""Paired comparison of `kiosk eval household` runs that asked the same questions (e.g. two model files).

Per split: owner F1, harmful answers, "I don't know" on unanswerable questions, and answer by answer how many
changed, how many of those scored better or worse (F1), with the two-sided sign test; then every question whose
harmful verdict differs between the runs, so a reader sees what a family would have been told.

    .venv/bin/python -m bench.bench_household_paired --name NAME \
        --run "shipped=bench/results/A.json" --run "Q8_0=bench/results/B.json"

The first --run is the reference.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.bench_paired import EPSILON, sign_test_p
from bench.common import table, write_results
from kiosk.eval.household_data import SPLITS as HOUSEHOLD_SPLITS

SPLITS = (*HOUSEHOLD_SPLITS, "all")


def _key(row: dict[str, Any]) -> str:
    return f"{row['household']}/{row['id']}"


def compare(reference: dict[str, Any], variant: dict[str, Any], split: str) -> dict[str, Any]:
    """Scores of `variant` on `split` and its answer-by-answer changes against `reference`."""
    before = {_key(row): row for row in reference["answers"] if split == "all" or row["split"] == split}
    after = {_key(row): row for row in variant["answers"] if split == "all" or row["split"] == split}
    if before.keys() != after.keys():
        raise SystemExit(f"the runs did not ask the same {split} questions")
    changed = better = worse = 0
    for key, old in before.items():
        new = after[key]
        if old["answer"] == new["answer"]:
            continue
        changed += 1
        difference = new["f1"] - old["f1"]
        better += difference > EPSILON
        worse += difference < -EPSILON
    scores = variant["scores"][split]
    return {
        "questions": scores["questions"],
        "f1": scores["f1"],
        "harmful": scores["harmful"],
        "idk_recall": scores["idk_recall"],
        "leaks": scores["leaks"],
        "changed_answers": changed,
        "better": better,
        "worse": worse,
        "sign_test_p": round(sign_test_p(better, worse), 3),
    }


def harm_changes(reference: dict[str, Any], variant: dict[str, Any]) -> list[dict[str, Any]]:
    """The questions one run answered harmfully and the other did not, with both answers."""
    after = {_key(row): row for row in variant["answers"]}
    changes = []
    for old in reference["answers"]:
        new = after[_key(old)]
        if bool(old["harmful"]) != bool(new["harmful"]):
            changes.append(
                {
                    "question": f"{_key(old)} ({old['split']}): {old['question']}",
                    "gold": " / ".join(old["gold"]),
                    "reference": old["answer"],
                    "variant": new["answer"],
                    "harmful_in": "variant" if new["harmful"] else "reference",
                }
            )
    return changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--run", action="append", required=True, help="label=household results.json (repeatable)")
    parser.add_argument("--note", default="", help="a sentence on how the runs were made, printed under the tables")
    args = parser.parse_args()
    runs = [(label.strip(), Path(path.strip())) for label, path in (item.split("=", 1) for item in args.run)]
    loaded = {label: json.loads(path.read_text(encoding="utf-8")) for label, path in runs}
    (reference_label, reference), *variants = loaded.items()

    figures: dict[str, Any] = {"splits": {}, "harm_changes": {}}
    lines: list[str] = []
    headers = ["run", "split", "questions", "owner F1", "harmful", '"I don\'t know" on unanswerable %', "leaks"]
    headers += ["changed answers", "better", "worse", "sign test p"]
    rows = []
    for split in SPLITS:
        if not any(split in ("all", row["split"]) for row in reference["answers"]):
            continue
        for label, run in loaded.items():
            result = compare(reference, run, split)
            figures["splits"].setdefault(split, {})[label] = result
            figures_row = [result["questions"], f"{result['f1']:.1f}", result["harmful"], f"{result['idk_recall']:.1f}"]
            figures_row.append(result["leaks"])
            counts = [result[key] for key in ("changed_answers", "better", "worse", "sign_test_p")]
            rows.append([label, split, *figures_row, *counts])
    lines += [table(headers, rows), ""]
    for label, run in variants:
        changes = harm_changes(reference, run)
        figures["harm_changes"][label] = changes
        lines += [f"## Harmful in one run only: {reference_label} vs {label}", ""]
        lines.append(
            table(
                ["question", "gold", reference_label, label, "harmful in"],
                [
                    [
                        c["question"],
                        c["gold"],
                        c["reference"],
                        c["variant"],
                        {"variant": label}.get(c["harmful_in"], reference_label),
                    ]
                    for c in changes
                ],
            )
            if changes
            else "None."
        )
        lines.append("")
    lines += [
        f"- {label}: `{run['command']}` → `{path}`" for (label, path), run in zip(runs, loaded.values(), strict=True)
    ]
    body = (
        f"Reference: {reference_label}. F1 and EM over answerable questions; harmful = an answer naming a wrong drug, "
        "dose, day or person (kiosk eval household); a changed answer is a different shown answer to the same "
        "question, better / worse = its F1 rose / fell.\n\n"
        + "\n".join(lines)
        + (f"\n\n{args.note}" if args.note else "")
    )
    write_results(args.name, figures, body)


if __name__ == "__main__":
    main()
