"""The household benchmarks' own logic: which runs the step comparison makes, and the floor sweep's error kinds."""

from __future__ import annotations

from typing import Any

from bench.bench_household import runs
from bench.bench_household_floor import at_floor, choose, keeping
from kiosk.llm.profiles import answer_profile


def test_the_comparison_runs_the_default_each_step_off_the_other_profiles_and_plain() -> None:
    steps = answer_profile("small-model").steps
    made = runs("small-model")
    assert made[0] == ("small-model", "small-model", ())
    assert made[1 : 1 + len(steps)] == [(f"small-model without {step}", "small-model", (step,)) for step in steps]
    assert made[1 + len(steps) :] == [
        ("careful", "careful", ()),
        ("lists", "lists", ()),
        ("checked", "checked", ()),
        ("weighed", "weighed", ()),
        # a profile adding steps to the default: each alone
        ("checked without answer-doer-named", "checked", ("answer-doer-named",)),
        ("checked without answer-day-named", "checked", ("answer-day-named",)),
        ("checked without answer-weekdays-named", "checked", ("answer-weekdays-named",)),
        ("checked without answer-still-to-do", "checked", ("answer-still-to-do",)),
        ("checked without answer-contradicted", "checked", ("answer-contradicted",)),
        ("checked without unknown-unsupported", "checked", ("unknown-unsupported",)),
        ("checked without unknown-contradicted", "checked", ("unknown-contradicted",)),
        ("checked without unknown-past-days", "checked", ("unknown-past-days",)),
        ("checked without unknown-medicine-times", "checked", ("unknown-medicine-times",)),
        ("checked without unknown-not-said-today", "checked", ("unknown-not-said-today",)),
        ("checked without unknown-personal-without-notes", "checked", ("unknown-personal-without-notes",)),
        ("checked without strike-done-items", "checked", ("strike-done-items",)),
        ("checked without complete-medicines", "checked", ("complete-medicines",)),
        ("plain", "plain", ()),
    ]


def _row(answerable: bool, best: float | None, found: bool = True) -> dict[str, Any]:
    return {"split": "dev", "question": "q", "answerable": answerable, "best": best, "evidence_found": found}


ROWS = [
    _row(True, 0.6),
    _row(True, 0.3),
    _row(True, 0.5, found=False),  # evidence never retrieved: lost whatever the floor
    _row(False, 0.35),
    _row(False, 0.2),
    _row(False, None),  # nothing retrieved at all: already empty
]


def test_a_floor_trades_kept_evidence_for_emptied_prompts() -> None:
    off = at_floor(ROWS, 0.0)
    assert (off["evidence_kept"], off["evidence_dropped"]) == (66.7, 0)
    assert (off["unanswerable_emptied"], off["unanswerable_given_notes"]) == (33.3, 2)
    high = at_floor(ROWS, 0.4)
    assert (high["evidence_kept"], high["evidence_dropped"]) == (33.3, 1)
    assert (high["unanswerable_emptied"], high["unanswerable_given_notes"]) == (100.0, 0)


def test_the_chosen_floors() -> None:
    sweep = [at_floor(ROWS, floor) for floor in (0.0, 0.25, 0.3, 0.36, 0.4)]
    # 0.25 to 0.4 all make 133.3 (kept + emptied): the lowest wins, and 0.0 (100) loses.
    assert choose(sweep) == 0.25
    assert choose(sweep[3:]) == 0.36
    assert keeping(sweep, kept=60.0) == 0.3
    assert keeping(sweep, kept=30.0) == 0.4
