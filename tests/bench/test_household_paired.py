"""The paired household comparison: changed answers per split, and the questions harmful in one run only."""

from __future__ import annotations

from typing import Any

from bench.bench_household_paired import compare, harm_changes


def _row(question_id: str, split: str, answer: str, f1: float, harmful: list[str]) -> dict[str, Any]:
    return {
        "household": "h",
        "id": question_id,
        "split": split,
        "question": f"question {question_id}?",
        "gold": ["Tuesday"],
        "answer": answer,
        "f1": f1,
        "harmful": harmful,
    }


def _run(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scores = {"questions": len(rows), "f1": 50.0, "harmful": 0, "idk_recall": 0.0, "leaks": 0}
    return {"answers": rows, "scores": {split: scores for split in ("dev", "test", "all")}, "command": "kiosk ..."}


REFERENCE = _run([_row("q1", "dev", "Tuesday", 1.0, []), _row("q2", "test", "Monday", 0.0, ["monday"])])
VARIANT = _run([_row("q1", "dev", "Friday", 0.0, ["friday"]), _row("q2", "test", "Tuesday", 1.0, [])])


def test_changes_are_counted_per_split_and_over_all() -> None:
    dev, test, every = (compare(REFERENCE, VARIANT, split) for split in ("dev", "test", "all"))
    assert (dev["changed_answers"], dev["better"], dev["worse"]) == (1, 0, 1)
    assert (test["changed_answers"], test["better"], test["worse"]) == (1, 1, 0)
    assert (every["changed_answers"], every["better"], every["worse"]) == (2, 1, 1)
    assert compare(REFERENCE, REFERENCE, "all")["changed_answers"] == 0


def test_a_question_harmful_in_one_run_only_is_listed_with_both_answers() -> None:
    changes = harm_changes(REFERENCE, VARIANT)
    assert [(c["reference"], c["variant"], c["harmful_in"]) for c in changes] == [
        ("Tuesday", "Friday", "variant"),
        ("Monday", "Tuesday", "reference"),
    ]
