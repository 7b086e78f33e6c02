"""The relevance floor on LoCoMo: how often a question asked against the owner's memories keeps its notes, how
often one asked against another person's memories is emptied, and the owner evidence recall it costs; plus the
floor calibrated on the text encoder (kiosk.retrieval.relevance).

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_relevance [--write-calibration]

Store: bench_retrieval's fast-construction LoCoMo store (cached in bench/cache). Each question of categories
1/2/4 is retrieved with the default retrieval (fused, K = 10) twice: from its owner's notes (related)
and from the next conversation's notes (unrelated: the Non-owner of `kiosk eval locomo`, whose own memories are
the only ones the gate opens). Signal = the best retrieved note's cosine similarity to the question.

Split: the floor is read off the questions OUTSIDE the evaluation's 10 % sample (ratio 0.1, seed 0: held out);
the sample's figures show how it carries over to the questions the LoCoMo table is scored on.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_retrieval import locomo_store
from bench.common import command_line, table, write_results
from kiosk.config import load_config
from kiosk.eval.locomo import load_conversations, locomo_path, select_questions
from kiosk.eval.metrics import CATEGORY_NAMES
from kiosk.memory import SqliteStore
from kiosk.retrieval import Retriever
from kiosk.retrieval.relevance import RELATED_KEPT, RelevanceCalibration, calibration_path, derive_floor
from kiosk.retrieval.thresholds import text_encoder_identity
from kiosk.retrieval.tuning import DEFAULT_TUNING

REPO = Path(__file__).resolve().parent.parent
KEPT_LEVELS = (0.90, 0.95, 0.98)


def measure(config: Any, encoder: Any, store_path: Path, data_dir: Path) -> list[dict[str, Any]]:
    """One row per question: split, category, best similarity and evidence recall@10 for related / unrelated."""
    conversations = load_conversations(locomo_path(data_dir))
    sample = {q.key for q in select_questions(conversations, 0.1, 0)}
    asked = [q for q in select_questions(conversations, 1.0, 0) if q.evidence]
    order = [c.sample_id for c in conversations]
    vectors = encoder.encode([q.question for q in asked])
    rows = []
    with SqliteStore(store_path) as store:
        owners = {u.name: u.id for u in store.list_users()}
        retriever = Retriever(store, config.retrieval)
        for question, vector in zip(asked, vectors, strict=True):
            stranger = order[(order.index(question.conversation_id) + 1) % len(order)]
            row: dict[str, Any] = {
                "key": question.key,
                "split": "sample" if question.key in sample else "held_out",
                "category": CATEGORY_NAMES[question.category],
            }
            for label, name in (("related", question.conversation_id), ("unrelated", stranger)):
                found = retriever.retrieve([owners[name]], vector, question.question, k=10)
                row[f"{label}.best"] = max((item.similarity for item in found.notes), default=0.0)
                refs = {item.note.source_ref for item in found.notes}
                row[f"{label}.recall"] = sum(1 for e in question.evidence if e in refs) / len(question.evidence)
            rows.append(row)
    return rows


def split_figures(rows: list[dict[str, Any]], floor: float) -> dict[str, float]:
    """Kept shares and owner recall@10 with / without the floor, per category and over all."""
    figures: dict[str, float] = {}
    for category in (*CATEGORY_NAMES.values(), "all"):
        chosen = [r for r in rows if category in ("all", r["category"])]
        if not chosen:
            continue
        kept = [r["related.best"] >= floor for r in chosen]
        figures[f"{category}.related_kept.fraction"] = round(float(np.mean(kept)), 4)
        figures[f"{category}.unrelated_kept.fraction"] = round(
            float(np.mean([r["unrelated.best"] >= floor for r in chosen])), 4
        )
        figures[f"{category}.owner_recall_at_10.no_floor"] = round(
            float(np.mean([r["related.recall"] for r in chosen])), 4
        )
        figures[f"{category}.owner_recall_at_10.floor"] = round(
            float(np.mean([r["related.recall"] if k else 0.0 for r, k in zip(chosen, kept, strict=True)])), 4
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-calibration", action="store_true", help="write calibration/relevance-<sha>.json")
    args = parser.parse_args()
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    from kiosk.text import load_text_encoder

    data_dir = config.paths.eval_data_dir
    encoder = load_text_encoder(config)
    store_path = locomo_store(config, encoder, data_dir / "locomo" / "locomo10.json")
    rows = measure(config, encoder, store_path, data_dir)
    held_out = [r for r in rows if r["split"] == "held_out"]
    sample = [r for r in rows if r["split"] == "sample"]
    related = [r["related.best"] for r in held_out]
    unrelated = [r["unrelated.best"] for r in held_out]

    figures: dict[str, Any] = {
        "locomo.questions": {"held_out": len(held_out), "sample": len(sample)},
        "locomo.held_out.related_best.percentiles": {
            f"p{q}": round(float(np.percentile(related, q)), 4) for q in (5, 10, 25, 50)
        },
        "locomo.held_out.unrelated_best.percentiles": {
            f"p{q}": round(float(np.percentile(unrelated, q)), 4) for q in (50, 75, 90, 95)
        },
    }
    sweep_rows = []
    for kept in KEPT_LEVELS:
        floor, _ = derive_floor(related, unrelated, kept)
        for split, chosen in (("held_out", held_out), ("sample", sample)):
            values = split_figures(chosen, floor)
            figures.update({f"locomo.{split}.kept{kept:.2f}.{key}": value for key, value in values.items()})
            sweep_rows.append(
                [
                    f"{kept:.2f}",
                    f"{floor:.4f}",
                    split,
                    values["all.related_kept.fraction"],
                    values["all.unrelated_kept.fraction"],
                    values["all.owner_recall_at_10.no_floor"],
                    values["all.owner_recall_at_10.floor"],
                ]
            )
    floor, unrelated_kept = derive_floor(related, unrelated, RELATED_KEPT)
    in_use = DEFAULT_TUNING.relevance_floor
    figures["calibration.derived.floor"] = floor
    figures["calibration.in_use.floor"] = in_use
    per_category = []
    for split, chosen in (("held_out", held_out), ("sample", sample)):
        values = split_figures(chosen, in_use)
        for category in (*CATEGORY_NAMES.values(), "all"):
            if f"{category}.related_kept.fraction" in values:
                per_category.append(
                    [
                        split,
                        category,
                        Counter(r["category"] for r in chosen)[category] if category != "all" else len(chosen),
                        values[f"{category}.related_kept.fraction"],
                        values[f"{category}.unrelated_kept.fraction"],
                        values[f"{category}.owner_recall_at_10.no_floor"],
                        values[f"{category}.owner_recall_at_10.floor"],
                    ]
                )
    encoder_name, encoder_sha = text_encoder_identity(config)
    calibration = RelevanceCalibration(
        encoder=encoder_name,
        encoder_sha256=encoder_sha,
        floor=floor,
        related_kept=RELATED_KEPT,
        unrelated_kept=unrelated_kept,
        samples={"related": len(related), "unrelated": len(unrelated)},
        data="LoCoMo locomo10.json questions of categories 1/2/4 outside the eval's 10 % sample (seed 0), default "
        "retrieval (K = 10) over fast-construction notes (related: the asker's conversation; unrelated: the next "
        "conversation)",
        command=command_line(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if args.write_calibration:
        target = calibration_path(REPO / "calibration", encoder_sha)
        target.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"wrote {target}", flush=True)

    md = [
        "Signal: the best retrieved note's cosine similarity to the question (default retrieval, K = 10). Related = "
        "the question against its owner's notes; unrelated = against the next conversation's notes (what a "
        "Non-owner's gate opens). The floor keeps a share of the HELD-OUT related questions (questions outside "
        "the LoCoMo eval's 10 % sample); the sample rows show the same floor on the questions the LoCoMo table "
        "scores. Owner recall@10 with the floor counts an emptied retrieval as 0.",
        "",
        "## Floor sweep",
        "",
        table(
            [
                "related kept (design)",
                "floor",
                "split",
                "related kept",
                "unrelated kept",
                "owner R@10",
                "owner R@10 with floor",
            ],
            sweep_rows,
        ),
        "",
        f"## The floor in use ({in_use:.4f}; derived from this run at {RELATED_KEPT:.2f} kept: {floor:.4f})",
        "",
        table(
            ["split", "category", "questions", "related kept", "unrelated kept", "owner R@10", "owner R@10 with floor"],
            per_category,
        ),
    ]
    write_results("relevance", figures, "\n".join(md))


if __name__ == "__main__":
    main()
