"""People named in the question (the retrieval tuning's person_weight): owner evidence recall@10 on LoCoMo with
the ranking of the named person's own notes in the fusion, against none.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_people [--weights 0,0.5,1,2]

A question that names someone ("What exercises has John done?") wants what that person said: on LoCoMo 96 % of
the evidence turns of such questions are the named speaker's own. kiosk/retrieval/people.py reads the names of
the question and each note's speaker (the first name of its context), and the pool's notes of the named person,
ranked by cosine, join the dense, lexical and dated rankings. Each weight runs `kiosk eval locomo
--retrieval-only` on ALL questions of categories 1/2/4 (palm probes, the protocol's shared store, the default
retrieval and relevance floor, K = 10). Figures are split into the questions outside the evaluation's 10 %
sample (held out) and the sample itself, into questions that name one of the conversation's two speakers and
the rest, and per category; "named speaker's share" is the fraction of the 10 notes the named speaker said, over
the questions naming exactly one speaker. LLM-free.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from bench.common import command_line, locomo_sample_keys, mean_evidence_recall, table, write_results
from kiosk.config import load_config
from kiosk.eval.locomo import load_conversations, locomo_path
from kiosk.eval.protocol import EvalOptions, run_locomo
from kiosk.retrieval.people import named_people
from kiosk.retrieval.tuning import DEFAULT_TUNING

CATEGORIES = ("multi-hop", "temporal", "single-hop")


def _speakers(data_dir: Any) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """(conversation id -> its two speakers, "conversation:dia_id" -> who said that turn)."""
    conversations = load_conversations(locomo_path(data_dir))
    pairs = {c.sample_id: (c.speaker_a, c.speaker_b) for c in conversations}
    turns = {
        f"{c.sample_id}:{turn.dia_id}": turn.speaker for c in conversations for s in c.sessions for turn in s.turns
    }
    return pairs, turns


def _named_speaker(answer: dict[str, Any], pairs: dict[str, tuple[str, str]]) -> str | None:
    """The one speaker of the question's conversation it names, or None (none or both)."""
    names = named_people(answer["question"])
    named = [speaker for speaker in pairs[answer["key"].split("#")[0]] if speaker in names]
    return named[0] if len(named) == 1 else None


def _speaker_share(answers: list[dict[str, Any]], pairs: dict[str, tuple[str, str]], turns: dict[str, str]) -> float:
    said = total = 0
    for answer in answers:
        speaker = _named_speaker(answer, pairs)
        if speaker is None:
            continue
        refs = answer["owner"]["refs"]
        said += sum(turns.get(ref) == speaker for ref in refs)
        total += len(refs)
    return said / total if total else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", default="0,0.5,1,2", help="comma-separated person weights")
    args = parser.parse_args()
    config = load_config()
    sample = locomo_sample_keys(config.paths.eval_data_dir)
    pairs, turns = _speakers(config.paths.eval_data_dir)
    figures: dict[str, Any] = {}
    rows = []
    counts: dict[str, int] = {}
    for weight in (float(w) for w in args.weights.split(",")):
        tuning = replace(DEFAULT_TUNING, person_weight=weight)
        options = EvalOptions(
            modality="palm", ratio=1.0, answer=False, write=False, command=command_line(), tuning=tuning
        )
        results = run_locomo(config, options)
        answers = results["answers"]
        held = [a for a in answers if a["key"] not in sample]
        named = {a["key"] for a in answers if _named_speaker(a, pairs) is not None}
        parts = {
            "held_out.named": [a for a in held if a["key"] in named],
            "held_out.unnamed": [a for a in held if a["key"] not in named],
            "held_out.all": held,
            "sample.all": [a for a in answers if a["key"] in sample],
            **{f"held_out.{c}": [a for a in held if a["category"] == c] for c in CATEGORIES},
        }
        counts = {name: len(part) for name, part in parts.items()}
        row: dict[str, Any] = {
            f"locomo.{name}.owner.recall_at_10": mean_evidence_recall(part) for name, part in parts.items()
        }
        row["locomo.held_out.named.owner.named_speaker_share"] = _speaker_share(parts["held_out.named"], pairs, turns)
        row["locomo.all.leaks.notes"] = results["leaks"]["notes"]
        row["locomo.all.retrieve_stage_s"] = results["timings_s"]["retrieve"]
        figures[f"person_weight.{weight:g}"] = row
        rows.append(
            [
                f"{weight:g}",
                *(f"{row[f'locomo.{name}.owner.recall_at_10']:.3f}" for name in parts),
                f"{row['locomo.held_out.named.owner.named_speaker_share']:.3f}",
                row["locomo.all.leaks.notes"],
                f"{row['locomo.all.retrieve_stage_s']:.1f}",
            ]
        )
        print(weight, row, flush=True)
    body = (
        f"LoCoMo, all {len(answers)} questions of categories 1/2/4 ({counts['held_out.all']} held out, "
        f"{counts['sample.all']} in the evaluation's 10 % sample), palm probes, the default fused retrieval "
        "(dense, lexical and dated rankings) with the relevance floor, K = 10, fast construction. Questions naming "
        f"one of their conversation's two speakers: {counts['held_out.named']} held out. Owner evidence recall@10 "
        "(fraction of each question's evidence turns among its 10 notes, averaged). Named speaker's share: of the "
        "10 notes of a held-out question naming one speaker, the fraction that speaker said. Leaks: notes of the "
        "target user retrieved under the non-owner probe (all questions). Retrieve stage: seconds for every "
        "question and condition of the run (owner, non-owner, ungated).\n\n"
        + table(
            [
                "person weight",
                "held out, naming a speaker",
                "held out, the rest",
                "held out, all",
                "sample, all",
                *(f"held out, {c}" for c in CATEGORIES),
                "named speaker's share",
                "leaks",
                "retrieve stage s",
            ],
            rows,
        )
    )
    write_results("people", figures, body, {"questions": counts})


if __name__ == "__main__":
    main()
