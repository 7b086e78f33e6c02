"""Dates named in the question (the retrieval tuning's date_weight and date_window_days): owner evidence recall@10 on
LoCoMo with the dated ranking in the fusion, against none.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_dates [--settings 0:30,1:10,1:30]

A question that names a date with a year ("What did Jolene ask Deb to help with on 13 March, 2023?") wants what
was said then or soon after; kiosk/retrieval/dates.py turns it into a window, and the pool's notes inside it,
ranked by cosine, join the dense and lexical rankings. Each setting (weight:days) runs `kiosk eval locomo
--retrieval-only` on ALL questions of categories 1/2/4 (palm probes, the protocol's shared store, the default
retrieval and relevance floor, K = 10). Figures are split into the questions outside the evaluation's 10 %
sample (held out: where the setting is chosen) and the sample itself, and into questions with and without a
dated mention (only those can change). LLM-free.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from bench.common import command_line, locomo_sample_keys, mean_evidence_recall, table, write_results
from kiosk.config import load_config
from kiosk.eval.protocol import EvalOptions, run_locomo
from kiosk.retrieval.dates import date_windows
from kiosk.retrieval.tuning import DEFAULT_TUNING

CATEGORIES = ("multi-hop", "temporal", "single-hop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default="0:30,1:3,1:10,1:30,2:30,3:30", help="comma-separated weight:days")
    args = parser.parse_args()
    config = load_config()
    sample = locomo_sample_keys(config.paths.eval_data_dir)
    figures: dict[str, Any] = {}
    rows = []
    counts: dict[str, int] = {}
    for setting in args.settings.split(","):
        weight, days = float(setting.split(":")[0]), int(setting.split(":")[1])
        tuning = replace(DEFAULT_TUNING, date_weight=weight, date_window_days=days)
        options = EvalOptions(
            modality="palm", ratio=1.0, answer=False, write=False, command=command_line(), tuning=tuning
        )
        results = run_locomo(config, options)
        answers = results["answers"]
        held = [a for a in answers if a["key"] not in sample]
        dated = {a["key"] for a in answers if date_windows(a["question"], days)}
        parts = {
            "held_out.dated": [a for a in held if a["key"] in dated],
            "held_out.undated": [a for a in held if a["key"] not in dated],
            "held_out.all": held,
            "sample.dated": [a for a in answers if a["key"] in sample and a["key"] in dated],
            "sample.all": [a for a in answers if a["key"] in sample],
            **{f"held_out.{c}": [a for a in held if a["category"] == c] for c in CATEGORIES},
        }
        counts = {name: len(part) for name, part in parts.items()}
        row: dict[str, Any] = {
            f"locomo.{name}.owner.recall_at_10": mean_evidence_recall(part) for name, part in parts.items()
        }
        row["locomo.all.leaks.notes"] = results["leaks"]["notes"]
        row["locomo.all.retrieve_stage_s"] = results["timings_s"]["retrieve"]
        figures[f"date_weight.{weight:g}.window_days.{days}"] = row
        rows.append(
            [
                f"{weight:g}",
                days,
                *(f"{row[f'locomo.{name}.owner.recall_at_10']:.3f}" for name in parts),
                row["locomo.all.leaks.notes"],
                f"{row['locomo.all.retrieve_stage_s']:.1f}",
            ]
        )
        print(setting, row, flush=True)
    body = (
        f"LoCoMo, all {len(answers)} questions of categories 1/2/4 ({counts['held_out.all']} held out, "
        f"{counts['sample.all']} in the evaluation's 10 % sample), palm probes, the default fused retrieval with "
        f"the relevance floor, K = 10, fast construction. Questions naming a date with a year: "
        f"{counts['held_out.dated']} held out, {counts['sample.dated']} in the sample. Owner evidence recall@10 "
        "(fraction of each question's evidence turns among its 10 notes, averaged). Leaks: notes of the target "
        "user retrieved under the non-owner probe (all questions). Retrieve stage: seconds for every question "
        "and condition of the run (owner, non-owner, ungated), one process after the other.\n\n"
        + table(
            [
                "date weight",
                "window days after",
                "held out, dated",
                "held out, undated",
                "held out, all",
                "sample, dated",
                "sample, all",
                *(f"held out, {c}" for c in CATEGORIES),
                "leaks",
                "retrieve stage s",
            ],
            rows,
        )
    )
    write_results("dates", figures, body, {"questions": counts})


if __name__ == "__main__":
    main()
