"""The answers with and without their restatement of the question (answer step cut-restatement, #9), one by one.

The cut is a function of the question and the LLM's reply only (kiosk/llm/answer_form.py), so one set of LLM
replies scores both ways: the reply as the LLM gave it (`reply` where the run kept one, else its `prediction`,
as runs made before the cut stored) and the reply with the restatement cut, made here by the current
concise_answer. Per run and pooled over the runs (a question two runs drew counts once, with the first run's
answers): macro-average F1 of both per condition, per category, how many answers the cut changed, how many of
those scored better or worse, and the two-sided sign test.

    .venv/bin/python -m bench.bench_concise --name NAME --run label=results.json [--run ...] [--note TEXT]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench.bench_paired import sign_test_p
from bench.bench_pooled import CATEGORY_IDS, CONDITIONS, load_runs
from bench.common import table, write_results
from kiosk.eval.metrics import CATEGORY_NAMES, CATEGORY_ORDER, aggregate, score_answer
from kiosk.llm.answer_form import concise_answer


def compare(answers: list[dict[str, Any]], condition: str) -> dict[str, Any] | None:
    """F1 of the replies as given and as cut, over the answers that have `condition`."""
    given, cut = [], []
    seconds: list[float] = []
    changed = better = worse = 0
    for answer in answers:
        if condition not in answer or "prediction" not in answer[condition]:
            continue
        category = CATEGORY_IDS[answer["category"]]
        reply = answer[condition].get("reply", answer[condition]["prediction"])
        started = time.perf_counter()
        concise = concise_answer(answer["question"], reply)
        seconds.append(time.perf_counter() - started)
        before = score_answer(reply, answer["answer"], category)
        after = score_answer(concise, answer["answer"], category)
        given.append(before)
        cut.append(after)
        changed += concise != reply
        better += after.f1 > before.f1
        worse += after.f1 < before.f1
    if not given:
        return None
    as_given, as_cut = aggregate(given), aggregate(cut)
    return {
        "questions": len(given),
        "f1_as_given": round(as_given.average_f1, 2),
        "f1_concise": round(as_cut.average_f1, 2),
        "per_category_as_given": {CATEGORY_NAMES[c]: round(v, 2) for c, v in sorted(as_given.f1.items())},
        "per_category_concise": {CATEGORY_NAMES[c]: round(v, 2) for c, v in sorted(as_cut.f1.items())},
        "changed": changed,
        "better": better,
        "worse": worse,
        "sign_test_p": round(sign_test_p(better, worse), 4),
        "cut_p50_us": round(1e6 * statistics.median(seconds), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True)
    parser.add_argument("--run", action="append", required=True, help="label=path of a kiosk eval locomo JSON")
    parser.add_argument("--note", default="")
    args = parser.parse_args()

    runs = load_runs(args.run)
    sets = [(label, run["answers"]) for label, run in runs]
    if len(runs) > 1:
        sets.append(("pooled", [answer for _, run in runs for answer in run["answers"]]))
    figures: dict[str, Any] = {}
    rows = []
    for label, answers in sets:
        for condition in CONDITIONS:
            result = compare(answers, condition)
            if result is None:
                continue
            figures[f"{label}.{condition}"] = result
            rows.append(
                [
                    label,
                    condition,
                    result["questions"],
                    f"{result['f1_as_given']:.2f}",
                    f"{result['f1_concise']:.2f}",
                    f"{result['f1_concise'] - result['f1_as_given']:+.2f}",
                    *(
                        f"{result['per_category_as_given'][CATEGORY_NAMES[c]]:.2f} → "
                        f"{result['per_category_concise'][CATEGORY_NAMES[c]]:.2f}"
                        for c in CATEGORY_ORDER
                    ),
                    result["changed"],
                    result["better"],
                    result["worse"],
                    result["sign_test_p"],
                    result["cut_p50_us"],
                ]
            )
    headers = ["questions", "condition", "n", "F1 as given", "F1 concise", "change"]
    headers += [f"{CATEGORY_NAMES[c]} F1" for c in CATEGORY_ORDER]
    headers += ["answers cut", "better", "worse", "sign test p", "cut p50 µs"]
    body = [
        "LoCoMo answers of `kiosk eval locomo` runs scored twice: the LLM's reply as given, and with its "
        "restatement of the question cut (kiosk/llm/answer_form.py, answer step `cut-restatement`). Macro-average "
        "F1 over multi-hop, temporal and single-hop in percent (LoCoMo's F1); `better` / `worse`: answers whose F1 "
        "the cut raised / lowered; `cut p50 µs`: the cut's median time per answer.",
        "",
        table(headers, rows),
        "",
        *(f"- {label}: `{run['command']}`" for label, run in runs),
    ]
    if args.note:
        body += ["", args.note]
    write_results(args.name, figures, "\n".join(body))


if __name__ == "__main__":
    main()
