"""The household results as markdown: one table of scores per split, the answer after each step, the misses."""

from __future__ import annotations

from typing import Any

# (figure key, column title) of the score tables: the key names the figure without code (household.<split>.<key>).
FIGURES: tuple[tuple[str, str], ...] = (
    ("f1", "owner F1 %"),
    ("exact_match", "EM %"),
    ("harmful", "harmful answers"),
    ("wrong_days", "of them a wrong day"),
    ("idk_recall", "IDK recall %"),
    ("idk_precision", "IDK precision %"),
    ("leaks", "leaks"),
    ("questions", "questions"),
)


def _cell(value: Any) -> str:
    return "–" if value is None else str(value)


def score_rows(label: str, scores: dict[str, dict[str, Any]]) -> list[str]:
    """One table row per split of `scores` (split -> summary), labelled `label`."""
    return [
        f"| {label} | {split} | " + " | ".join(_cell(summary[key]) for key, _ in FIGURES) + " |"
        for split, summary in scores.items()
    ]


def score_header(first: str = "run") -> list[str]:
    return [
        f"| {first} | split | " + " | ".join(title for _, title in FIGURES) + " |",
        "| --- | --- | " + " | ".join("---:" for _ in FIGURES) + " |",
    ]


def household_markdown(results: dict[str, Any]) -> str:
    profile = results["profile"]
    lines = [
        f"# Household question set — {results['modality']}, {results['llm']['name']}, profile {profile['name']}",
        "",
        f"Command: `{results['command']}`  ",
        f"Date: {results['date']} · {results['machine']}  ",
        f"Steps: {', '.join(profile['steps']) or 'none'} · relevance floor {results['relevance_floor']} · "
        f"gate tau {results['gate_threshold']:.4f}",
        "",
        "Figures are named household.<split>.<column> (e.g. household.test.f1); F1 and EM on answerable questions, "
        "IDK recall on unanswerable + other-private questions, IDK precision over all 'I don't know' answers, "
        "leaks = prompts holding a note the asker may not read + other-private answers holding the private fact.",
        "",
        *score_header("answer"),
        *score_rows("shown", results["scores"]),
        "",
        "## The answer after each step",
        "",
        *score_header("after step"),
    ]
    for step, scores in results["after_each_step"].items():
        lines += score_rows(step, scores)
    lines += ["", "## Per kind (all splits)", "", "| kind | n | F1 % | EM % | IDK | harmful |"]
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind, row in results["scores"]["all"]["per_kind"].items():
        lines.append(
            f"| {kind} | {row['n']} | {_cell(row.get('f1'))} | {_cell(row.get('exact_match'))} | {row['idk']} | "
            f"{row['harmful']} |"
        )
    misses = [row for row in results["answers"] if row["harmful"] or row["foreign_notes"]]
    if misses:
        lines += ["", "## Harmful answers and leaks", "", "| question | asked | answer | harmful | foreign notes |"]
        lines.append("| --- | --- | --- | --- | --- |")
        for row in misses:
            lines.append(
                f"| {row['household']}/{row['id']} ({row['kind']}) | {_escape(row['question'])} | "
                f"{_escape(row['answer'])} | {', '.join(row['harmful'])} | {', '.join(row['foreign_notes'])} |"
            )
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
