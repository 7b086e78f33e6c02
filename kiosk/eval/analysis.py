"""Where the Owner score loses to the gold-evidence score: retrieval misses vs reading the context.

Each question is put in a bucket by the Owner condition's evidence recall@K (all evidence retrieved,
part of it, none of it). The micro-averaged F1 difference gold - owner is then split by bucket, so the
share caused by retrieval (evidence not in the context) and by the LLM reading a context that did hold
the evidence (plus nine distracting notes) can be read off directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BUCKETS = ("all evidence retrieved", "part of it retrieved", "no evidence retrieved")


def owner_recall(answer: Mapping[str, Any], evidence: Sequence[str]) -> float | None:
    if not evidence:
        return None
    user = str(answer["key"]).split("#")[0]
    refs = {ref.split(":", 1)[1] for ref in answer["owner"].get("refs", []) if ref.startswith(f"{user}:")}
    return sum(1 for e in evidence if e in refs) / len(evidence)


def gold_gap(answers: Sequence[Mapping[str, Any]], evidence_by_key: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    rows: dict[str, dict[str, float]] = {name: {"n": 0, "owner": 0.0, "gold": 0.0} for name in BUCKETS}
    total = 0
    for answer in answers:
        if "f1" not in answer.get("owner", {}) or "f1" not in answer.get("gold_evidence", {}):
            continue
        recall = owner_recall(answer, evidence_by_key.get(str(answer["key"]), ()))
        if recall is None:
            continue
        bucket = BUCKETS[0] if recall >= 1.0 else BUCKETS[2] if recall == 0.0 else BUCKETS[1]
        rows[bucket]["n"] += 1
        rows[bucket]["owner"] += float(answer["owner"]["f1"])
        rows[bucket]["gold"] += float(answer["gold_evidence"]["f1"])
        total += 1
    if total == 0:
        return {"questions": 0, "buckets": {}}
    buckets = {}
    for name, row in rows.items():
        n = int(row["n"])
        buckets[name] = {
            "questions": n,
            "owner_f1": round(100 * row["owner"] / n, 2) if n else None,
            "gold_f1": round(100 * row["gold"] / n, 2) if n else None,
            # points of the micro-averaged gap this bucket accounts for
            "gap_points": round(100 * (row["gold"] - row["owner"]) / total, 2),
        }
    owner_micro = 100 * sum(r["owner"] for r in rows.values()) / total
    gold_micro = 100 * sum(r["gold"] for r in rows.values()) / total
    return {
        "questions": total,
        "owner_f1_micro": round(owner_micro, 2),
        "gold_f1_micro": round(gold_micro, 2),
        "buckets": buckets,
    }


def gold_gap_markdown(analysis: Mapping[str, Any]) -> str:
    if not analysis.get("questions"):
        return ""
    lines = [
        f"Micro-averaged over {analysis['questions']} questions with evidence: gold evidence "
        f"{analysis['gold_f1_micro']:.2f} F1 vs Owner {analysis['owner_f1_micro']:.2f} F1 "
        f"(gap {analysis['gold_f1_micro'] - analysis['owner_f1_micro']:.2f} points), split by how much of the "
        "question's evidence the Owner retrieval put into the context:",
        "",
        "| Owner context | questions | Owner F1 | Gold F1 | points of the gap |",
        "|---|---|---|---|---|",
    ]
    for name, row in analysis["buckets"].items():
        owner = "–" if row["owner_f1"] is None else f"{row['owner_f1']:.2f}"
        gold = "–" if row["gold_f1"] is None else f"{row['gold_f1']:.2f}"
        lines.append(f"| {name} | {row['questions']} | {owner} | {gold} | {row['gap_points']:.2f} |")
    return "\n".join(lines)
