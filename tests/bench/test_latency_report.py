"""The latency bench's summary and markdown report (bench/latency_report.py) from a tiny hand-made run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bench.latency_levers import Asked, Lever
from bench.latency_report import categories, render, summarise
from kiosk.eval.locomo import Question
from kiosk.eval.metrics import MULTI_HOP, SINGLE_HOP
from kiosk.memory.note import Note

NOTE = Note(1, 1, "palm", "went hiking in the Alps", datetime(2023, 5, 1))
ASKED = [
    Asked(Question("conv-1", 0, "Where did Ann hike?", "the Alps", SINGLE_HOP, ()), [NOTE], "Ann", [], None, {}),
    Asked(Question("conv-1", 1, "Who went hiking?", "Ann", MULTI_HOP, ()), [NOTE], "Ann", [], None, {}),
]


def answer_row(first_token_s: float, total_s: float, text: str) -> dict[str, Any]:
    return {
        "first_token_s": first_token_s,
        "total_s": total_s,
        "first_token_cpu_s": 2 * first_token_s,
        "total_cpu_s": 2 * total_s,
        "prompt_tokens": 300,
        "completion_tokens": 4,
        "text": text,
    }


def test_the_summary_and_the_report_show_each_levers_medians_and_owner_f1() -> None:
    baseline = Lever("baseline")
    timed = {
        "baseline": {
            "owner": [answer_row(0.5, 1.0, "the Alps"), answer_row(0.7, 1.4, "Ann")],
            "non_owner": [],
            "load": [{"start": 1.25, "end": 1.5}, {"start": 1.5, "end": 1.75}],
            "seconds": 90.0,
            "system_info": [{"text": "AVX = 1"}],
        }
    }
    summary = summarise("tiny-model", [baseline], timed, ASKED)
    entry = summary["baseline"]
    assert (entry["first_token_p50_ms"], entry["total_p50_ms"], entry["first_token_cpu_p50_ms"]) == (
        600.0,
        1200.0,
        1200.0,
    )
    assert entry["owner_f1"] == 100.0 and entry["questions"] == 2 and entry["minutes"] == 1.5
    assert "non_owner_f1" not in entry

    figures = {
        "questions": len(ASKED),
        "seed": 0,
        "mode": "sequential",
        "threads": 2,
        "max_tokens": 32,
        "minutes": 1.5,
        "load_average": {"start": 1.25, "end": 1.75},
        "categories": categories(ASKED),
        "models": {
            "tiny-model": {"levers": summary, "stages_baseline": None, "stages_all": None, "fastest": "baseline"}
        },
    }
    assert figures["categories"] == {"single-hop": 1, "multi-hop": 1}
    lines = render(figures).splitlines()
    header = lines.index("## tiny-model") + 2
    assert lines[header].startswith("| lever | first token p50 ms (wall) | p95 | total p50 ms (wall) |")
    assert lines[header].endswith("| owner F1 | owner F1 per category | load |")
    assert lines[header + 2] == (
        "| baseline | 600.000 | 690.000 | 1200.000 | 1380.000 | 1200.000 | 2400.000 | 300.000 | 0.000 | 0.000 | 4.000 "
        "| 2 | 100.000 | single-hop 100.0, multi-hop 100.0 | 1.25 -> 1.75 |"
    )
    assert not any(line.startswith("Stages,") for line in lines)
    assert lines[-1] == "Fastest first token: baseline."
    assert "one lever after the other, one llama.cpp process at a time (sequential mode)" in lines[0]
