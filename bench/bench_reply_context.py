"""Reply context in fast-mode notes: owner evidence recall@10 on LoCoMo with the turn each note replies to
quoted in its context (ConstructionTuning.reply_context_words), against none.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_reply_context [--words 0,15,30,60]

A bare reply ("5 years already!") shares no word with the question it answers ("How long have Mel and her
husband been married?"); the turn it replies to does. Each setting ingests the 10 LoCoMo conversations into the
protocol's shared store (fast construction, cached per setting in bench/cache/stores) and runs `kiosk eval
locomo --retrieval-only` on ALL questions of categories 1/2/4 (palm probes, the default retrieval and relevance
floor, K = 10). Figures are split into the questions outside the evaluation's 10 % sample (held out: where the
setting is chosen) and the sample itself. LLM-free.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from bench.common import command_line, locomo_sample_keys, mean_evidence_recall, table, write_results
from kiosk.config import load_config
from kiosk.eval.protocol import EvalOptions, run_locomo
from kiosk.memory.build import CONSTRUCTION


def recall(answers: list[dict[str, Any]], condition: str, keys: set[str], inside: bool) -> float | None:
    return mean_evidence_recall([answer for answer in answers if (answer["key"] in keys) == inside], condition)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", default="0,15,30,60", help="comma-separated reply_context_words settings")
    args = parser.parse_args()
    config = load_config()
    sample = locomo_sample_keys(config.paths.eval_data_dir)
    figures: dict[str, Any] = {}
    rows = []
    for words in (int(w) for w in args.words.split(",")):
        construction = replace(CONSTRUCTION, reply_context_words=words)
        options = EvalOptions(
            modality="palm", ratio=1.0, answer=False, write=False, command=command_line(), construction=construction
        )
        results = run_locomo(config, options)
        answers = results["answers"]
        held_out, in_sample = len([a for a in answers if a["key"] not in sample]), len(sample)
        row = {
            "locomo.held_out.owner.recall_at_10": recall(answers, "owner", sample, inside=False),
            "locomo.sample.owner.recall_at_10": recall(answers, "owner", sample, inside=True),
            "locomo.held_out.ungated.recall_at_10": recall(answers, "ungated", sample, inside=False),
            "locomo.all.owner.below_relevance_floor": results["conditions"]["owner"]["below_relevance_floor"],
            "locomo.all.non_owner.below_relevance_floor": results["conditions"]["non_owner"]["below_relevance_floor"],
            "locomo.all.questions": len(answers),
            "store_build_s": results["store"]["build"].get("seconds"),
        }
        figures[f"reply_context_words.{words}"] = row
        rows.append(
            [
                words,
                f"{row['locomo.held_out.owner.recall_at_10']:.3f}",
                f"{row['locomo.sample.owner.recall_at_10']:.3f}",
                f"{row['locomo.held_out.ungated.recall_at_10']:.3f}",
                f"{row['locomo.all.owner.below_relevance_floor']} / {len(answers)}",
                f"{row['locomo.all.non_owner.below_relevance_floor']} / {len(answers)}",
            ]
        )
        print(words, row, flush=True)
    body = (
        f"LoCoMo, all {len(answers)} questions of categories 1/2/4 ({held_out} held out, {in_sample} in the "
        "evaluation's 10 % sample), palm probes, the default fused retrieval with the relevance floor, K = 10, "
        "fast construction; the store re-ingested per setting.\n\n"
        + table(
            [
                "reply context words",
                "owner recall@10, held out",
                "owner recall@10, sample",
                "ungated recall@10, held out",
                "owner questions emptied by the floor",
                "non-owner questions emptied by the floor",
            ],
            rows,
        )
    )
    write_results("reply_context", figures, body)


if __name__ == "__main__":
    main()
