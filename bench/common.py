"""Shared benchmark plumbing: percentiles, and results written as JSON + a markdown table with the command."""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def percentiles_ms(samples_s: Sequence[float]) -> dict[str, float]:
    values = np.asarray(samples_s, dtype=np.float64) * 1000.0
    return {"p50_ms": float(np.percentile(values, 50)), "p95_ms": float(np.percentile(values, 95)), "n": len(values)}


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "note": "2-core shared CI machine: compare within a run (medians, ratios), not across runs",
    }


def command_line() -> str:
    script = Path(sys.argv[0])
    runner = ["-m", f"bench.{script.stem}"] if script.parent == Path(__file__).resolve().parent else [sys.argv[0]]
    return " ".join(shlex.quote(a) for a in [".venv/bin/python", *runner, *sys.argv[1:]])


def write_results(name: str, figures: dict[str, Any], markdown_body: str, extra: dict[str, Any] | None = None) -> Path:
    """Write bench/results/<name>.json and <name>.md; the md starts with the command that made it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    payload = {"command": command_line(), "created": created, "machine": machine(), "figures": figures, **(extra or {})}
    json_path = RESULTS / f"{name}.json"
    json_path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    md = f"# {name}\n\nMade by `{payload['command']}` on {created} ({payload['machine']['note']}).\n\n{markdown_body}\n"
    (RESULTS / f"{name}.md").write_text(md)
    return json_path


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def fmt(value: Any) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def locomo_sample_keys(data_dir: Path) -> set[str]:
    """Keys of the LoCoMo evaluation's 10 % sample (seed 0): what held-out figures leave out."""
    from kiosk.eval.locomo import load_conversations, locomo_path, select_questions

    return {q.key for q in select_questions(load_conversations(locomo_path(data_dir)), 0.1, 0)}


def mean_evidence_recall(answers: Sequence[dict[str, Any]], condition: str = "owner") -> float | None:
    """Mean evidence recall of `kiosk eval locomo` answers in one condition (refs read "user:dia_id"); questions
    without evidence are left out, None when none is left."""
    from kiosk.eval.metrics import evidence_recall

    values = [
        value
        for answer in answers
        if (value := evidence_recall(answer["evidence"], (r.split(":", 1)[1] for r in answer[condition]["refs"])))
        is not None
    ]
    return sum(values) / len(values) if values else None
