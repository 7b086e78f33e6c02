"""The sensitivity rules on the hand-written household notes (bench/data/household/*.toml, each note labelled
`sensitive` = none | a category): precision and recall per class and overall, per split (dev / test).

"sensitive" is binary (any category vs none). Class agreement is the share of all notes whose predicted class
(none included) equals the label. Per class, precision and recall are one-vs-rest on that class. The rules may
be improved on dev households only; test households are reported untouched.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import table
from kiosk.memory.sensitivity import CATEGORIES, classify_rules

HOUSEHOLDS = Path(__file__).resolve().parent / "data" / "household"
SPLITS = ("dev", "test")
CLASSES = ("none", *CATEGORIES)


@dataclass(frozen=True)
class LabelledNote:
    household: str
    split: str
    note_id: str
    text: str
    label: str
    predicted: str


def load_notes(folder: Path = HOUSEHOLDS) -> list[LabelledNote]:
    """Every note of every household file, with its label and the rules' class."""
    notes = []
    for path in sorted(folder.glob("*.toml")):
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        household = data["household"]
        for note in data.get("notes", []):
            label = str(note.get("sensitive", "none"))
            if label not in CLASSES:
                raise SystemExit(f"{path.name} note {note.get('id')}: unknown sensitive class {label!r}")
            text = str(note["text"])
            notes.append(
                LabelledNote(
                    str(household["id"]), str(household["split"]), str(note["id"]), text, label,
                    classify_rules(text) or "none",
                )
            )  # fmt: skip
    return notes


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def split_scores(notes: list[LabelledNote]) -> dict[str, Any]:
    """Binary sensitive-vs-not scores, class agreement, per-class one-vs-rest scores and the confusion counts."""
    tp = sum(1 for n in notes if n.label != "none" and n.predicted != "none")
    fp = sum(1 for n in notes if n.label == "none" and n.predicted != "none")
    fn = sum(1 for n in notes if n.label != "none" and n.predicted == "none")
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    per_class: dict[str, dict[str, Any]] = {}
    for name in CATEGORIES:
        hit = sum(1 for n in notes if n.label == name and n.predicted == name)
        labelled = sum(1 for n in notes if n.label == name)
        predicted = sum(1 for n in notes if n.predicted == name)
        class_precision, class_recall = _ratio(hit, predicted), _ratio(hit, labelled)
        per_class[name] = {
            "labelled": labelled,
            "predicted": predicted,
            "correct": hit,
            "precision": class_precision,
            "recall": class_recall,
            "f1": _f1(class_precision, class_recall),
        }
    return {
        "notes": len(notes),
        "sensitive.precision": precision,
        "sensitive.recall": recall,
        "sensitive.f1": _f1(precision, recall),
        "sensitive.tp_fp_fn": [tp, fp, fn],
        "class_agreement": _ratio(sum(1 for n in notes if n.label == n.predicted), len(notes)),
        "classes": per_class,
        "confusion": {f"{y}->{p}": c for (y, p), c in sorted(Counter((n.label, n.predicted) for n in notes).items())},
    }


def worst_class(scores: dict[str, Any]) -> str | None:
    """The labelled class with the lowest F1 (unset counts as 0); ties go to the one with more notes."""
    present = [(name, s) for name, s in scores["classes"].items() if s["labelled"]]
    if not present:
        return None
    return min(present, key=lambda item: (item[1]["f1"] or 0.0, -item[1]["labelled"]))[0]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def household_section() -> tuple[dict[str, Any], str]:
    """(figures keyed `household.<split>.…`, the markdown section) for the current rules."""
    notes = load_notes()
    figures: dict[str, Any] = {}
    overall_rows = []
    class_rows = []
    confusion_lines = []
    for split in SPLITS:
        chosen = [n for n in notes if n.split == split]
        if not chosen:
            continue
        scores = split_scores(chosen)
        households = len({n.household for n in chosen})
        figures[f"household.{split}"] = {**scores, "households": households}
        tp, fp, fn = scores["sensitive.tp_fp_fn"]
        overall_rows.append(
            [
                split,
                households,
                scores["notes"],
                tp + fn,
                _fmt(scores["sensitive.precision"]),
                _fmt(scores["sensitive.recall"]),
                _fmt(scores["sensitive.f1"]),
                f"{tp}/{fp}/{fn}",
                _fmt(scores["class_agreement"]),
            ]
        )
        for name, s in scores["classes"].items():
            class_rows.append(
                [split, name, s["labelled"], s["predicted"], _fmt(s["precision"]), _fmt(s["recall"]), _fmt(s["f1"])]
            )
        worst = worst_class(scores)
        if worst is not None:
            figures[f"household.{split}.worst_class"] = worst
            went = Counter(n.predicted for n in chosen if n.label == worst)
            came = Counter(n.label for n in chosen if n.predicted == worst and n.label != worst)
            confusion_lines.append(
                f"- {split}: worst class **{worst}** (F1 {_fmt(scores['classes'][worst]['f1'])}). Its "
                f"{sum(went.values())} labelled notes were classed: "
                + ", ".join(f"{p} {c}" for p, c in went.most_common())
                + ". Notes classed as it but labelled otherwise: "
                + (", ".join(f"{y} {c}" for y, c in came.most_common()) or "none")
                + "."
            )
    return figures, (
        "## Household notes: the rules (kiosk/memory/sensitivity.py)\n\n"
        "Hand-written household notes (bench/data/household/*.toml, labelled `sensitive` by their writers). "
        "Sensitive = any class vs none; class agreement = share of all notes whose class (none included) is "
        "the label's. The rules were extended (2026-12-03) from the misses on **dev** households only "
        "(dentist / GP / dosages / medicine-name stems, amounts in euro or kronor, 'the code for … is NNNN', "
        "the spare key, non-English street addresses, 'no password' is none); **test** households were not "
        "read for it, and the LoCoMo figures below did not change with it.\n\n"
        + table(
            [
                "split",
                "households",
                "notes",
                "sensitive notes",
                "sensitive precision",
                "sensitive recall",
                "sensitive F1",
                "TP/FP/FN",
                "class agreement",
            ],
            overall_rows,
        )
        + "\n\nPer class (one-vs-rest):\n\n"
        + table(["split", "class", "labelled", "classed as it", "precision", "recall", "F1"], class_rows)
        + "\n\nConfusion of the worst class:\n\n"
        + "\n".join(confusion_lines)
    )


def dev_misses() -> list[LabelledNote]:
    """Dev-split notes the rules class wrongly (what rule changes may look at)."""
    return [n for n in load_notes() if n.split == "dev" and n.label != n.predicted]


if __name__ == "__main__":
    for miss in dev_misses():
        print(f"{miss.household}/{miss.note_id} {miss.label} -> {miss.predicted}: {miss.text}")
