"""No-memory prompt: what the assistant says to someone it does not recognise, under each system prompt.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_no_memory_prompt \
    [--seed 1] [--held-out-from 0] [--variants "before,default + worked examples,default"] [--name no_memory_prompt]

Three sets, each answered by the default GGUF under every variant in the same run:
- LoCoMo: the no-memory condition of `kiosk eval locomo` on the questions of `--seed` (by default the development
  questions `--held-out --seed 1`, outside the seed-0 sample). Every one is about someone's life, so the right
  reply is "I don't know": a lower F1 and more refusals are better. This is what a Non-owner is answered with
  when the gate rejects the probe.
- personal: 20 kiosk-style questions about the asker or an invented person (bench/general_knowledge.py):
  refusals wanted.
- general: 40 general-knowledge questions with accepted answers: right answers wanted; a refusal is a loss, a
  wrong answer a worse one (the person may believe it).

Variants (the system message of the no-memory prompt; the user message is the same for all):
- before: the no-memory prompt shipped until this benchmark (one rule, no example).
- default + worked examples: the shipped rule plus seven worked examples of both kinds (invented people).
- default: the shipped prompt, a longer rule that names what counts as personal (what someone did, said, has,
  likes or plans; family, pets, work, trips; when something happened), no example.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from bench.common import command_line, table, write_results
from bench.general_knowledge import GENERAL_QUESTIONS, PERSONAL_QUESTIONS, answers_correctly, is_refusal
from kiosk.config import load_config
from kiosk.eval.answer_cache import AnswerCache
from kiosk.eval.answering import clean_answer
from kiosk.eval.models import load_llm
from kiosk.eval.protocol import EvalOptions, run_locomo
from kiosk.llm import prompts

BEFORE = (
    "You are an assistant at a shared kiosk with no personal memories of the person in front of you. Answer "
    "general questions in a few words. If the question is about this person's own life, people or past "
    f"conversations, reply exactly: {prompts.UNKNOWN_ANSWER}."
)
WORKED_EXAMPLES = f"""

Examples:
Question: What is the capital of Italy?
Answer: Rome
Question: What did Odile name her puppy?
Answer: {prompts.UNKNOWN_ANSWER}
Question: How many days are in a week?
Answer: 7
Question: When did Bram start his pottery class?
Answer: {prompts.UNKNOWN_ANSWER}
Question: Who wrote Hamlet?
Answer: William Shakespeare
Question: Which cities have Odile and Bram visited together?
Answer: {prompts.UNKNOWN_ANSWER}
Question: What did I have for dinner on Friday?
Answer: {prompts.UNKNOWN_ANSWER}"""
VARIANTS = {
    "before": BEFORE,
    "default + worked examples": prompts.COMPACT_NO_MEMORY_SYSTEM + WORKED_EXAMPLES,
    "default": prompts.COMPACT_NO_MEMORY_SYSTEM,
}


def ask(llm: Any, question: str, max_tokens: int) -> str:
    return clean_answer(llm.chat(prompts.compact_answer_messages(question, []), max_tokens=max_tokens, temperature=0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--held-out-from", type=int, default=0, help="draw outside this seed's sample; -1: do not")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="no_memory_prompt", help="results file stem")
    args = parser.parse_args()
    config = load_config()
    config.llm.threads = args.threads
    held_out = None if args.held_out_from < 0 else args.held_out_from
    shipped = prompts.COMPACT_NO_MEMORY_SYSTEM
    figures: dict[str, Any] = {}
    rows = []
    examples: dict[str, dict[str, str]] = {}
    unknown = prompts.UNKNOWN_ANSWER
    try:
        for variant in args.variants.split(","):
            prompts.COMPACT_NO_MEMORY_SYSTEM = VARIANTS[variant]
            options = EvalOptions(
                modality="palm",
                seed=args.seed,
                held_out_from=held_out,
                conditions=("no_memory",),
                write=False,
                command=command_line(),
            )
            results = run_locomo(config, options)
            scores = results["conditions"]["no_memory"]["scores"]
            locomo_predictions = [a["no_memory"]["prediction"] for a in results["answers"]]
            locomo_refused = float(np.mean([is_refusal(p, unknown) for p in locomo_predictions]))

            cache = AnswerCache(options.cache_dir / "answers.sqlite")
            try:
                llm = load_llm(config, cache, options.cache_dir).llm
                personal = [ask(llm, q, options.answer_tokens) for q in PERSONAL_QUESTIONS]
                general = [ask(llm, g.question, options.answer_tokens) for g in GENERAL_QUESTIONS]
            finally:
                cache.close()
            personal_refused = float(np.mean([is_refusal(p, unknown) for p in personal]))
            general_right = float(
                np.mean([answers_correctly(p, g.answers) for p, g in zip(general, GENERAL_QUESTIONS, strict=True)])
            )
            general_refused = float(np.mean([is_refusal(p, unknown) for p in general]))
            general_wrong = 1.0 - general_right - general_refused
            key = variant.replace(" ", "_")
            figures[f"locomo.no_memory.{key}.f1"] = scores["average"]["f1"]
            figures[f"locomo.no_memory.{key}.refused.fraction"] = locomo_refused
            figures[f"personal.{key}.refused.fraction"] = personal_refused
            figures[f"general.{key}.right.fraction"] = general_right
            figures[f"general.{key}.refused.fraction"] = general_refused
            figures[f"general.{key}.wrong.fraction"] = general_wrong
            examples[variant] = {
                **{q: p for q, p in zip(PERSONAL_QUESTIONS[:5], personal, strict=False)},
                **{g.question: p for g, p in zip(GENERAL_QUESTIONS[:5], general, strict=False)},
            }
            per = scores["per_category"]
            rows.append(
                [
                    variant,
                    *(per[c]["f1"] for c in ("single-hop", "multi-hop", "temporal")),
                    scores["average"]["f1"],
                    f"{100 * locomo_refused:.1f} %",
                    f"{100 * personal_refused:.0f} %",
                    f"{100 * general_right:.0f} %",
                    f"{100 * general_refused:.0f} %",
                    f"{100 * general_wrong:.0f} %",
                ]
            )
            print(variant, rows[-1], flush=True)
    finally:
        prompts.COMPACT_NO_MEMORY_SYSTEM = shipped
    sample = f"`--held-out --seed {args.seed}`" if held_out is not None else f"`--seed {args.seed}`"
    body = (
        f"{len(results['answers'])} LoCoMo questions ({sample}), {len(PERSONAL_QUESTIONS)} personal and "
        f"{len(GENERAL_QUESTIONS)} general-knowledge questions (bench/general_knowledge.py); "
        f"{results['llm']['name']}, greedy, llama.cpp build {results['llm'].get('llama_build')}. "
        "LoCoMo F1 is macro x 100 of the no-memory answers: lower is better, as every question is about someone's "
        'life. Refused: the reply is "I don\'t know".\n\n'
        + table(
            [
                "no-memory system prompt",
                "LoCoMo single-hop F1",
                "multi-hop F1",
                "temporal F1",
                "LoCoMo avg F1 (lower is better)",
                "LoCoMo refused",
                "personal refused",
                "general right",
                "general refused",
                "general answered wrongly",
            ],
            rows,
        )
        + "\n\nFirst answers of each set:\n\n"
        + "\n".join(
            f"- {variant}: " + "; ".join(f"{q} → {a}" for q, a in said.items()) for variant, said in examples.items()
        )
    )
    write_results(args.name, figures, body, extra={"examples": examples})


if __name__ == "__main__":
    main()
