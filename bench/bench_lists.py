"""What completing a one-thing answer to a list (answer step complete-lists, kiosk/llm/lists.py) costs at the kiosk.

The eval's answers come from its answer cache, so its continuations run on a cold llama context and time the
whole prompt again. At the kiosk a continuation follows the answer it continues, whose tokens the context still
holds. This replays that order on the real model: for the owner questions a `kiosk eval locomo` run completed
(their answers record `unlisted_answer`), the same prompt (the owner's retrieved notes, from the run's cached
store) is answered as the kiosk answers it (kiosk.llm.answer_steps.shown_reply after the chat), and the answer and
the steps after it are timed apart, question by question, in one process.

    .venv/bin/python -m bench.bench_lists --results bench/results/RUN.json [--questions 30] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import table, write_results
from kiosk.config import load_config
from kiosk.eval.answering import answer_request, clean_answer
from kiosk.eval.protocol import EvalOptions
from kiosk.eval.store import cached_store_path
from kiosk.llm import create_llm
from kiosk.llm.answer_steps import shown_reply
from kiosk.llm.locked import close_llm
from kiosk.llm.profiles import answer_profile
from kiosk.memory import SqliteStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True, help="a `kiosk eval locomo` results JSON")
    parser.add_argument("--questions", type=int, default=30, help="at most this many completed questions")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--name", default="complete_lists_latency")
    args = parser.parse_args()

    run: dict[str, Any] = json.loads(args.results.read_text(encoding="utf-8"))
    completed = [row for row in run["answers"] if "unlisted_answer" in row["owner"]][: args.questions]
    config = load_config()
    config.llm.threads = args.threads
    llm = create_llm(config)
    rows: list[dict[str, Any]] = []
    with SqliteStore(cached_store_path(EvalOptions.cache_dir, run["store"]["key"])) as store:
        notes_of: dict[str, dict[str | None, Any]] = {}
        for row in completed:
            person, refs = row["key"].split("#")[0], row["owner"]["refs"]
            if person not in notes_of:
                user = store.user_by_name(person)
                assert user is not None and user.id is not None, person
                notes_of[person] = {note.source_ref: note for note in store.list_notes(user.id)}
            notes = [notes_of[person][ref.split(":", 1)[1]] for ref in refs]
            messages = answer_request(row["question"], notes, person)
            started = time.perf_counter()
            reply = clean_answer(llm.chat(messages, max_tokens=run["answer_tokens"], temperature=0.0))
            answered = time.perf_counter()
            shown = shown_reply(
                llm,
                messages,
                row["question"],
                reply,
                notes_given=True,
                profile=answer_profile(config.llm.answer_profile),
                max_tokens=run["answer_tokens"],
                temperature=0.0,
                clean=clean_answer,
            )
            finished = time.perf_counter()
            rows.append(
                {
                    "key": row["key"],
                    "answer_s": round(answered - started, 3),
                    "steps_after_s": round(finished - answered, 3),
                    "shown": shown.text,
                    "as_in_the_run": shown.text == row["owner"]["prediction"],
                }
            )
    close_llm(llm)
    answer_s = [r["answer_s"] for r in rows]
    after_s = [r["steps_after_s"] for r in rows]
    ratios = [after / answer for answer, after in zip(answer_s, after_s, strict=True) if answer > 0]
    figures = {
        "locomo.lists.questions": len(rows),
        "locomo.lists.answer.p50_s": round(statistics.median(answer_s), 3),
        "locomo.lists.completion.p50_s": round(statistics.median(after_s), 3),
        "locomo.lists.completion.max_s": round(max(after_s), 3),
        "locomo.lists.completion_over_answer.p50_ratio": round(statistics.median(ratios), 3),
        "locomo.lists.same_answer_as_the_run.fraction": round(sum(r["as_in_the_run"] for r in rows) / len(rows), 3),
    }
    body = "\n\n".join(
        [
            f"{len(rows)} owner questions that `{run['command']}` completed to a list, answered again in kiosk order "
            f"on {run['llm']['name']} ({args.threads} llama.cpp threads): the answer (chat), then the steps after "
            "it (kiosk.llm.answer_steps: the cut, and the continuation after a comma), timed apart, medians.",
            table(["figure", "value"], [[key, value] for key, value in figures.items()]),
            table(
                ["question", "answer s", "continuation s", "shown", "as in the run"],
                [[r["key"], r["answer_s"], r["steps_after_s"], r["shown"], r["as_in_the_run"]] for r in rows],
            ),
        ]
    )
    write_results(args.name, figures, body, {"rows": rows})
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
