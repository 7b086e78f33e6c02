"""What the relevance floor buys and costs in answers: the owner's F1 it gives up, and the wrong personal answers
it prevents, at the shipped floor and at a lower one, with the default LLM.

KIOSK_DATA=/work/shared/data .venv/bin/python -m bench.bench_floor_answers --lower 0.3734 --seeds 1-15

- Owner: `kiosk eval locomo --modality palm --held-out --seed S` (owner condition) with the shipped floor and with
  `--lower`, answer by answer (the eval's answer cache makes the unchanged answers free). Only questions whose
  best note lies between the two floors can change.
- Unrelated: every held-out question (outside the seed-0 sample) asked against the NEXT conversation's notes, the
  memories of someone the question is not about, with the default retrieval (K = 10): how many get notes at each
  floor, and how many of those the LLM answers from them instead of "I don't know". Every such answer is a wrong
  personal detail shown to the person.
- Check: for the questions whose best note lies between the two floors (related and unrelated), the LLM asked
  whether the notes answer the question (yes / no): could it let the lower floor through only where it should?
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_paired import sign_test_p
from bench.bench_retrieval import locomo_store
from bench.common import table, write_results
from bench.general_knowledge import is_refusal
from kiosk.config import KioskConfig, load_config
from kiosk.eval.answer_cache import AnswerCache
from kiosk.eval.answering import answer_request, clean_answer
from kiosk.eval.locomo import Question, load_conversations, locomo_path, select_questions
from kiosk.eval.metrics import CATEGORY_NAMES
from kiosk.eval.models import load_llm
from kiosk.eval.protocol import EvalOptions, run_locomo
from kiosk.llm.answer_form import shown_answer
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.memory import SqliteStore
from kiosk.retrieval import Retriever
from kiosk.retrieval.tuning import DEFAULT_TUNING

REPO = Path(__file__).resolve().parent.parent
EPSILON = 1e-3


@dataclass
class HeldOut:
    """The LoCoMo questions outside the eval's seed-0 sample, the fast-construction store and the cached LLM."""

    store_path: Path
    questions: list[Question]
    vectors: np.ndarray
    order: list[str]
    llm: Any

    @classmethod
    def load(cls, config: KioskConfig) -> HeldOut:
        from kiosk.text import load_text_encoder

        data_dir = config.paths.eval_data_dir
        encoder = load_text_encoder(config)
        store_path = locomo_store(config, encoder, data_dir / "locomo" / "locomo10.json")
        conversations = load_conversations(locomo_path(data_dir))
        sample = {q.key for q in select_questions(conversations, 0.1, 0)}
        questions = [q for q in select_questions(conversations, 1.0, 0) if q.key not in sample]
        cache_dir = REPO / "bench" / "cache"
        loaded = load_llm(config, AnswerCache(cache_dir / "answers.sqlite"), cache_dir)
        vectors = encoder.encode([q.question for q in questions])
        return cls(store_path, questions, vectors, [c.sample_id for c in conversations], loaded.llm)

    def asked(self) -> Iterator[tuple[Question, np.ndarray, str]]:
        """(question, its vector, the next conversation: someone the question is not about)."""
        for question, vector in zip(self.questions, self.vectors, strict=True):
            yield question, vector, self.order[(self.order.index(question.conversation_id) + 1) % len(self.order)]


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def owner_run(config: KioskConfig, seed: int, floor: float, results_dir: Path) -> dict[str, Any]:
    options = EvalOptions(
        modality="palm",
        seed=seed,
        held_out_from=0,
        conditions=("owner",),
        results_dir=results_dir,
        write=False,
        tuning=replace(DEFAULT_TUNING, relevance_floor=floor),
    )
    return run_locomo(config, options)


def owner_comparison(config: KioskConfig, seeds: list[int], lower: float) -> dict[str, Any]:
    shipped = DEFAULT_TUNING.relevance_floor
    per_seed, seen = [], set()
    pooled: dict[str, dict[str, list[float]]] = {"shipped": {}, "lower": {}}
    pooled_better = pooled_worse = 0
    with tempfile.TemporaryDirectory() as scratch:
        for seed in seeds:
            before = owner_run(config, seed, shipped, Path(scratch))
            after = owner_run(config, seed, lower, Path(scratch))
            changed = better = worse = 0
            for old, new in zip(before["answers"], after["answers"], strict=True):
                if old["owner"]["prediction"] != new["owner"]["prediction"]:
                    changed += 1
                    better += new["owner"]["f1"] - old["owner"]["f1"] > EPSILON
                    worse += new["owner"]["f1"] - old["owner"]["f1"] < -EPSILON
                if seed > 1 and old["key"] not in seen:  # seed 1 is the development set: not pooled
                    seen.add(old["key"])
                    for label, row in (("shipped", old), ("lower", new)):
                        pooled[label].setdefault(row["category"], []).append(row["owner"]["f1"])
                    pooled_better += new["owner"]["f1"] - old["owner"]["f1"] > EPSILON
                    pooled_worse += new["owner"]["f1"] - old["owner"]["f1"] < -EPSILON
            per_seed.append(
                {
                    "seed": seed,
                    "owner_f1.shipped": before["metrics"]["locomo.palm.owner.f1"],
                    "owner_f1.lower": after["metrics"]["locomo.palm.owner.f1"],
                    "below_shipped_floor": sum(1 for a in before["answers"] if a["owner"]["below_relevance_floor"]),
                    "below_lower_floor": sum(1 for a in after["answers"] if a["owner"]["below_relevance_floor"]),
                    "changed": changed,
                    "better": better,
                    "worse": worse,
                }
            )
    macro = {label: float(np.mean([100 * np.mean(v) for v in rows.values()])) for label, rows in pooled.items()}
    return {
        "per_seed": per_seed,
        "pooled_questions": len(seen),
        "pooled_owner_f1": {label: round(value, 2) for label, value in macro.items()},
        "held_out_better": pooled_better,
        "held_out_worse": pooled_worse,
        "held_out_sign_test_p": sign_test_p(pooled_better, pooled_worse),
    }


def unrelated_answers(config: KioskConfig, held_out: HeldOut, floors: tuple[float, float]) -> dict[str, Any]:
    lowest = min(floors)
    rows: list[dict[str, Any]] = []
    with SqliteStore(held_out.store_path) as store:
        owners = {user.name: user.id for user in store.list_users()}
        retriever = Retriever(store, config.retrieval)
        for question, vector, stranger in held_out.asked():
            found = retriever.retrieve([owners[stranger]], vector, question.question, k=config.retrieval.k)
            row: dict[str, Any] = {
                "key": question.key,
                "category": CATEGORY_NAMES[question.category],
                "best": max((item.similarity for item in found.notes), default=0.0),
            }
            if row["best"] >= lowest:
                messages = answer_request(question.question, [item.note for item in found.notes], stranger)
                raw = held_out.llm.chat(messages, max_tokens=config.llm.max_answer_tokens, temperature=0.0)
                row["answer"] = shown_answer(question.question, clean_answer(raw), concise=True)
                row["refused"] = is_refusal(row["answer"], UNKNOWN_ANSWER)
            rows.append(row)
    figures: dict[str, Any] = {"questions": len(rows)}
    for floor in floors:
        given = [row for row in rows if row["best"] >= floor]
        answered = [row for row in given if not row["refused"]]
        figures[f"{floor:.4f}"] = {
            "given_notes": len(given),
            "given_notes.fraction": round(len(given) / len(rows), 4),
            "answered_from_wrong_notes": len(answered),
            "answered_from_wrong_notes.fraction": round(len(answered) / len(rows), 4),
            "refused_when_given_notes.fraction": round(1 - len(answered) / len(given), 4) if given else None,
        }
    figures["examples"] = [(row["key"], row["answer"]) for row in rows if "answer" in row][:8]
    return figures


CHECK_SYSTEM = (
    "You check whether a person's memory notes answer a question. Reply with one word: yes if a note tells the "
    "answer, no if none does."
)


def notes_answer_check(config: KioskConfig, held_out: HeldOut, band: tuple[float, float]) -> dict[str, Any]:
    """The LLM's yes / no on "do these notes answer the question" for questions whose best note is in `band`."""
    from kiosk.llm.prompts import compact_notes

    replies: dict[str, list[str]] = {"related": [], "unrelated": []}
    with SqliteStore(held_out.store_path) as store:
        owners = {user.name: user.id for user in store.list_users()}
        retriever = Retriever(store, config.retrieval)
        for question, vector, stranger in held_out.asked():
            for label, name in (("related", question.conversation_id), ("unrelated", stranger)):
                found = retriever.retrieve([owners[name]], vector, question.question, k=config.retrieval.k)
                best = max((item.similarity for item in found.notes), default=0.0)
                if not band[0] <= best < band[1]:
                    continue
                ordered = sorted(found.notes, key=lambda item: item.note.timestamp)
                notes = compact_notes([(item.note.timestamp, item.note.content, item.note.context) for item in ordered])
                messages = [
                    {"role": "system", "content": CHECK_SYSTEM},
                    {
                        "role": "user",
                        "content": f"Notes:\n<notes>\n{notes}\n</notes>\n\nQuestion: {question.question}\n"
                        "Do the notes answer it (yes or no)?",
                    },
                ]
                replies[label].append(held_out.llm.chat(messages, max_tokens=3, temperature=0.0).strip().lower())
    return {
        label: {
            "questions": len(answers),
            "yes.fraction": round(float(np.mean([a.startswith("yes") for a in answers])), 4) if answers else None,
        }
        for label, answers in replies.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lower", type=float, required=True, help="the lower floor compared with the shipped one")
    parser.add_argument("--seeds", default="1-15", help="held-out seeds for the owner comparison (1 = development)")
    parser.add_argument("--name", default="relevance_floor_answers")
    args = parser.parse_args()
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    shipped = DEFAULT_TUNING.relevance_floor
    owner = owner_comparison(config, seeds_of(args.seeds), args.lower)
    held_out = HeldOut.load(config)
    unrelated = unrelated_answers(config, held_out, (shipped, args.lower))
    check = notes_answer_check(config, held_out, (args.lower, shipped))
    figures = {
        "locomo.heldout.owner.f1.shipped_floor": owner["pooled_owner_f1"]["shipped"],
        "locomo.heldout.owner.f1.lower_floor": owner["pooled_owner_f1"]["lower"],
        "locomo.unrelated.answered_from_wrong_notes.shipped_floor.fraction": unrelated[f"{shipped:.4f}"][
            "answered_from_wrong_notes.fraction"
        ],
        "locomo.unrelated.answered_from_wrong_notes.lower_floor.fraction": unrelated[f"{args.lower:.4f}"][
            "answered_from_wrong_notes.fraction"
        ],
    }
    seed_rows = [
        [
            row["seed"] if row["seed"] > 1 else "1 (development)",
            row["below_shipped_floor"],
            row["below_lower_floor"],
            f"{row['owner_f1.shipped']:.2f}",
            f"{row['owner_f1.lower']:.2f}",
            row["changed"],
            row["better"],
            row["worse"],
        ]
        for row in owner["per_seed"]
    ]
    floor_rows = [
        [
            f"{floor:.4f}" + (" (shipped)" if floor == shipped else ""),
            unrelated["questions"],
            f"{unrelated[f'{floor:.4f}']['given_notes']} ({unrelated[f'{floor:.4f}']['given_notes.fraction']:.1%})",
            f"{unrelated[f'{floor:.4f}']['answered_from_wrong_notes']} "
            f"({unrelated[f'{floor:.4f}']['answered_from_wrong_notes.fraction']:.1%})",
            unrelated[f"{floor:.4f}"]["refused_when_given_notes.fraction"],
        ]
        for floor in (shipped, args.lower)
    ]
    body = "\n".join(
        [
            f"Default LLM and defaults; the shipped floor {shipped:.4f} (keeps 95 % of related questions) against "
            f"{args.lower:.4f}.",
            "",
            "## Owner questions (palm, held out, owner condition), answer by answer",
            "",
            table(
                [
                    "seed",
                    "below shipped floor",
                    "below lower floor",
                    "owner F1 shipped",
                    "owner F1 lower",
                    "answers changed",
                    "better",
                    "worse",
                ],
                seed_rows,
            ),
            "",
            f"Held-out seeds pooled ({owner['pooled_questions']} distinct questions, seed 1 left out): owner F1 "
            f"{owner['pooled_owner_f1']['shipped']:.2f} -> {owner['pooled_owner_f1']['lower']:.2f}; "
            f"of those distinct questions {owner['held_out_better']} answers better, {owner['held_out_worse']} worse "
            f"(sign test p {owner['held_out_sign_test_p']:.1e}).",
            "",
            "## Questions asked against another person's memories (held out, next conversation's notes)",
            "",
            table(
                ["floor", "questions", "given notes", "answered from the wrong notes", "said I don't know"], floor_rows
            ),
            "",
            "Examples of answers from the wrong notes: "
            + "; ".join(f"{key}: {answer!r}" for key, answer in unrelated["examples"]),
            "",
            f"## The LLM asked whether the notes answer the question (best note between {args.lower:.4f} and "
            f"{shipped:.4f})",
            "",
            table(
                ["questions asked against", "questions", "replied yes"],
                [[label, row["questions"], row["yes.fraction"]] for label, row in check.items()],
            ),
        ]
    )
    write_results(args.name, figures, body, {"owner": owner, "unrelated": unrelated, "notes_answer_check": check})


if __name__ == "__main__":
    main()
