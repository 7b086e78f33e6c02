"""Results of a LoCoMo run: the paper-shaped markdown table, flat metric keys, and atomic writing."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kiosk.eval.metrics import CATEGORY_NAMES, CATEGORY_ORDER
from kiosk.llm.profiles import Step

CONDITION_LABELS: dict[str, str] = {
    "owner": "Owner",
    "non_owner": "Non-owner",
    "no_memory": "No memory",
    "ungated": "Ungated A-Mem (one pool)",
    "gold_evidence": "Gold evidence (reference)",
}


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _row(label: str, scores: Mapping[str, Any], gap: float | None) -> str:
    cells = [label]
    per_category = scores["per_category"]
    for category in CATEGORY_ORDER:
        entry = per_category.get(CATEGORY_NAMES[category])
        cells += [_cell(entry["f1"] if entry else None), _cell(entry["bleu1"] if entry else None)]
    cells += [_cell(scores["average"]["f1"]), _cell(scores["average"]["bleu1"]), _cell(gap)]
    return "| " + " | ".join(cells) + " |"


def score_table(conditions: Mapping[str, Mapping[str, Any]], gap_f1: float | None) -> str:
    """Rows Owner / Non-owner / baselines; columns per category F1 and BLEU-1, Average, Gap (F1 points)."""
    header = ["Condition"]
    for category in CATEGORY_ORDER:
        name = CATEGORY_NAMES[category].capitalize()
        header += [f"{name} F1", f"{name} BLEU-1"]
    header += ["Avg. F1", "Avg. BLEU-1", "Avg. Gap (F1)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, label in CONDITION_LABELS.items():
        if key in conditions and conditions[key].get("scores"):
            lines.append(_row(label, conditions[key]["scores"], gap_f1 if key == "owner" else None))
    if len(lines) == 2:
        return "(retrieval-only run: no LLM answers, so no F1/BLEU-1 table)"
    return "\n".join(lines)


def _recall_line(conditions: Mapping[str, Mapping[str, Any]]) -> str:
    parts = []
    for key, label in CONDITION_LABELS.items():
        recall = conditions.get(key, {}).get("evidence_recall_at_k")
        if recall is not None:
            parts.append(f"{label} {100 * recall:.1f} %")
    return ", ".join(parts)


def _floor_line(results: Mapping[str, Any]) -> str:
    """How many questions of each condition found notes but none about the question (relevance floor)."""
    floor = results.get("relevance_floor", 0.0)
    if not floor:
        return "Relevance floor: off (every retrieved note goes into the prompt)."
    counts = [
        f"{label} {results['conditions'][key]['below_relevance_floor']}"
        for key, label in CONDITION_LABELS.items()
        if results["conditions"].get(key, {}).get("below_relevance_floor") is not None
    ]
    return (
        f"Relevance floor {floor:.4f} (best retrieved note's cosine to the question; below it the question is "
        f"answered without personal memory). Questions below it: {', '.join(counts)} "
        f"of {results['counts']['questions']}."
    )


# each answer step's summary in the results (kiosk.eval.answering): its name, the answers before and after it, the
# key an answer it changed records its earlier form under, and the answer profile's steps it stands for (the
# summary is made when the profile takes one of them)
STEP_SUMMARIES: tuple[tuple[str, str, str, str, tuple[Step, ...]], ...] = (
    ("before_concise", "reply", "shown", "reply", ("cut-restatement",)),
    (
        "before_restated",
        "shown",
        "unlisted",
        "first_answer",
        ("reask-restated", "unknown-restated-without-notes", "reask-speaker-names"),
    ),
    (
        "before_lists",
        "unlisted",
        "listed",
        "unlisted_answer",
        ("complete-lists", "strike-done-items", "complete-medicines"),
    ),
    ("before_grounding", "listed", "answer", "ungrounded_answer", ("unknown-ungrounded",)),
)


def _before_step_line(results: Mapping[str, Any], key: str, opening: str, changed: str) -> str:
    """Each condition's F1 before one answer-changing step, from its results[conditions][...][key] summary."""
    parts = [
        f"{label} {before['f1']:.2f} F1 ({before['changed']} {changed}: {before['better']} better, "
        f"{before['worse']} worse)"
        for condition, label in CONDITION_LABELS.items()
        if (before := results["conditions"].get(condition, {}).get(key))
    ]
    return f"{opening}: " + "; ".join(parts) + "." if parts else ""


def concise_line(results: Mapping[str, Any]) -> str:
    """Each condition's F1 before the answers' restatement of the question was cut (step cut-restatement)."""
    opening = "The same replies before the restated question was cut (answer step cut-restatement)"
    return _before_step_line(results, "before_concise", opening, "answers cut")


def restated_line(results: Mapping[str, Any]) -> str:
    """Each condition's F1 before answers that only restated the question or named a speaker of the notes were
    replaced (steps reask-restated, unknown-restated-without-notes, reask-speaker-names)."""
    opening = (
        "The same answers before those only restating the question (or only naming a speaker of the notes) were "
        'answered again, or without notes shown as "I don\'t know" (answer steps reask-restated, '
        "unknown-restated-without-notes, reask-speaker-names)"
    )
    return _before_step_line(results, "before_restated", opening, "replaced")


def lists_line(results: Mapping[str, Any]) -> str:
    """Each condition's F1 before one-thing answers to questions asking for several were completed from the
    notes, lists of what is still to do lost the items a note says are done, and medicine answers gained the
    medicines their note's sentence names beside them (steps complete-lists, strike-done-items, complete-medicines)."""
    opening = (
        "The same answers before one thing named for a question asking for several was completed from the notes, "
        "a list of what is still to do lost the items a note says are done, or a medicine answer gained the "
        "medicines its note's sentence names beside it (answer steps complete-lists, strike-done-items, "
        "complete-medicines)"
    )
    return _before_step_line(results, "before_lists", opening, "changed")


def grounding_line(results: Mapping[str, Any]) -> str:
    """Each condition's F1 before answers the notes about the question do not give became "I don't know" (step
    unknown-ungrounded)."""
    opening = (
        'The same answers before those the notes about the question do not give were shown as "I don\'t know" '
        "(answer step unknown-ungrounded)"
    )
    return _before_step_line(results, "before_grounding", opening, "withdrawn")


def render_markdown(results: Mapping[str, Any]) -> str:
    conditions = results["conditions"]
    gate = results["gate"]
    leaks = results["leaks"]
    answered = any(payload.get("scores") for payload in conditions.values())
    model = results["llm"]["name"] if answered else "retrieval only (no LLM answers)"
    lines = [
        f"# LoCoMo shared-store evaluation — {results['modality']} gate, {model}",
        "",
        f"Command: `{results['command']}`",
        "",
        f"Date: {results['date']} · Machine: {results['machine']}",
        "",
        f"{results['counts']['users']} users (one LoCoMo conversation each) in one store, "
        f"{results['counts']['notes']} notes ({results['construct']} construction); "
        f"{results['counts']['questions']} questions (ratio {results['ratio']}, seed {results['seed']}: "
        + ", ".join(f"{name} {n}" for name, n in results["counts"]["per_category"].items())
        + f"); K = {results['k']}.",
        "",
        score_table(conditions, results["gap"]["f1"]),
        "",
        "F1 and BLEU-1 in percent (LoCoMo normalisation; multi-hop partial F1). "
        f"Avg. Gap = Owner − Non-owner = {_cell(results['gap']['f1'])} F1 / {_cell(results['gap']['bleu1'])} "
        "BLEU-1 points.",
        "",
        f"Evidence recall@{results['k']} (LLM-free): " + _recall_line(conditions) + ".",
        "",
        *([line, ""] if (line := concise_line(results)) else []),
        *([line, ""] if (line := restated_line(results)) else []),
        *([line, ""] if (line := lists_line(results)) else []),
        *([line, ""] if (line := grounding_line(results)) else []),
        _floor_line(results),
        "",
        f"Gate: policy `{gate['policy']}`, threshold τ = {gate['threshold']:.4f} from `{gate['calibration']}` "
        f"(rule {gate['rule']}, encoder {gate['encoder']}). Owner probes verified: "
        f"{gate['owner_verified']}/{gate['users']}; Non-owner probes matched to the target: "
        f"{gate['non_owner_false_matches']}/{gate['users']}.",
        "",
        f"Leaks (target user's notes retrieved under the Non-owner probe): **{leaks['notes']}** "
        f"over {leaks['questions']} questions; of which from biometric false matches: {leaks['from_false_matches']}.",
        "",
    ]
    if results.get("gold_gap_analysis"):
        lines += ["## Where the gap to gold evidence comes from", "", results["gold_gap_analysis"], ""]
    lines += [
        "## Identity bindings",
        "",
        "| user | identity | gallery image | owner probe image |",
        "|---|---|---|---|",
    ]
    for binding in results["assignments"]:
        lines.append(
            f"| {binding['user']} | {binding['identity']} | {binding['gallery_image']} | {binding['probe_image']} |"
        )
    lines += ["", "## Wall time per stage", "", "| stage | seconds |", "|---|---|"]
    for stage, seconds in results["timings_s"].items():
        lines.append(f"| {stage} | {seconds:.1f} |")
    llm = results["llm"]
    lines += (
        []
        if not answered
        else [
            "",
            f"LLM: {llm['name']} (sha256 {llm['sha256'][:12]}…), uncached answers "
            f"{llm['generated']} (p50 {llm['p50_s']:.2f} s, p95 {llm['p95_s']:.2f} s per answer), "
            f"cache hits {llm['cache_hits']}.",
            "",
        ]
    )
    return "\n".join(lines)


def flat_metrics(results: Mapping[str, Any]) -> dict[str, float]:
    """Flat keys with data set and unit, e.g. `locomo.face.owner.f1` (percent)."""
    modality = results["modality"]
    flat: dict[str, float] = {}
    for condition, payload in results["conditions"].items():
        scores = payload["scores"]
        prefix = f"locomo.{modality}.{condition}"
        if scores:
            flat[f"{prefix}.f1"] = scores["average"]["f1"]
            flat[f"{prefix}.bleu1"] = scores["average"]["bleu1"]
            for name, entry in scores["per_category"].items():
                flat[f"{prefix}.{name}.f1"] = entry["f1"]
                flat[f"{prefix}.{name}.bleu1"] = entry["bleu1"]
        if payload.get("evidence_recall_at_k") is not None:
            flat[f"{prefix}.evidence_recall_at_{results['k']}.fraction"] = payload["evidence_recall_at_k"]
        if payload.get("below_relevance_floor") is not None:
            flat[f"{prefix}.below_relevance_floor.questions"] = payload["below_relevance_floor"]
        for step, *_ in STEP_SUMMARIES:
            if payload.get(step):
                flat[f"{prefix}.{step}.f1"] = payload[step]["f1"]
    if results["gap"]["f1"] is not None:
        flat[f"locomo.{modality}.gap.f1"] = results["gap"]["f1"]
        flat[f"locomo.{modality}.gap.bleu1"] = results["gap"]["bleu1"]
    flat[f"locomo.{modality}.leaks.notes"] = results["leaks"]["notes"]
    return flat


def write_atomically(path: Path, text: str) -> None:
    """Write next to the target and rename, so a reader never sees a half-written result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_results(results: Mapping[str, Any], json_path: Path) -> tuple[Path, Path]:
    """Both files are fully rendered in memory before either is written; each is renamed into place."""
    markdown_path = json_path.with_suffix(".md")
    json_text = json.dumps(results, indent=2, ensure_ascii=False) + "\n"
    markdown_text = render_markdown(results)
    write_atomically(json_path, json_text)
    write_atomically(markdown_path, markdown_text)
    return json_path, markdown_path
