"""Scopes and forgetting on LoCoMo, LLM-free: evidence recall@10 with and without decay in ranking, and the
scope term's effect when other people's notes share the pool as public notes.

.venv/bin/python -m bench.bench_scopes [--questions N] [--half-lives 30,90,180] [--weights 0.02,0.05,0.2]
                                        [--fusion weighted|off]

Store: bench_retrieval's LoCoMo cache (10 conversations, fast construction, one owner per conversation);
built there on first use. Each question is retrieved in its owner's pool (the gate is bench_retrieval's
business; here the owner is given). No LLM runs. Retrieval is the config's (fused with BM25 by default: the
semantic part of the score is then the fused score divided into [0, 1]; --fusion off: cosine alone).

Decay: LoCoMo has no usage history, so a note's strength is its age: s = 2^(-(now - said)/half-life).
"now" is one day after the conversation's last session (the questions are asked after the conversation
ends; the sessions span 5-10 months in 2022-2024, so the calendar date of the run, years later, would make
every note equally faded). Half-lives of 30-180 days are on the scale of that span. score = cosine +
gamma * strength (beta plays no part: one scope).

Scopes: each owner's pool also holds two other conversations' notes labelled public (distractors standing
in for a terminal's public knowledge); score = cosine + beta * relevance (personal 1, public 0). Reported:
recall@10 and the share of the top-10 that is public, for several beta.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np

from bench.bench_retrieval import CATEGORIES, locomo_store
from bench.common import table, write_results
from kiosk.config import ForgettingConfig, load_config
from kiosk.memory import SqliteStore
from kiosk.memory.note import from_epoch
from kiosk.retrieval import Retriever
from kiosk.retrieval.ranking import ScopeWeights
from kiosk.retrieval.tuning import DEFAULT_TUNING


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=0, help="Subsample this many questions (0: all).")
    parser.add_argument("--half-lives", default="30,90,180")
    parser.add_argument("--weights", default="0.02,0.05,0.2")
    parser.add_argument("--betas", default="0.02,0.05,0.1")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--fusion", default="", help="override the tuning's fusion (weighted or off = dense)")
    args = parser.parse_args()
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    from kiosk.text import load_text_encoder

    data = config.paths.eval_data_dir / "locomo" / "locomo10.json"
    encoder = load_text_encoder(config)
    store = SqliteStore(locomo_store(config, encoder, data))
    samples = json.loads(data.read_text())
    users = {u.name: u.id for u in store.list_users()}
    questions = [
        (sample["sample_id"], qa)
        for sample in samples
        for qa in sample["qa"]
        if qa.get("category") in CATEGORIES and qa.get("evidence")
    ]
    if args.questions and args.questions < len(questions):
        picked = np.random.default_rng(13).choice(len(questions), args.questions, replace=False)
        questions = [questions[i] for i in sorted(picked)]
    vectors = encoder.encode([qa["question"] for _, qa in questions])
    now = {
        name: from_epoch(float(store.owner_matrix([uid])[1].max())) + timedelta(days=1) for name, uid in users.items()
    }
    half_lives = [float(h) for h in args.half_lives.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    betas = [float(b) for b in args.betas.split(",")]
    retrieval = config.retrieval
    tuning = replace(DEFAULT_TUNING, cache_ttl_ms=0, **({"fusion": args.fusion} if args.fusion else {}))
    fused = tuning.fusion != "off" and tuning.lexical_weight > 0
    prefix = "fused" if fused else "dense"
    semantic = "fused score / its ceiling" if fused else "cosine"

    def retriever(weight: float = 0.0, half_life: float = 90.0, beta: float = 0.0) -> Retriever:
        return Retriever(
            store,
            retrieval,
            ScopeWeights(beta=beta),
            ForgettingConfig(weight=weight, half_life_days=half_life),
            tuning,
        )

    variants: dict[str, Retriever] = {f"{prefix}-familiarity.no_decay": retriever()}
    for half_life in half_lives:
        for weight in weights:
            variants[f"{prefix}-familiarity.decay_h{half_life:g}d_w{weight:g}"] = retriever(weight, half_life)
    names = sorted(users)
    distractors = {
        name: [users[names[(i + 1) % len(names)]], users[names[(i + 2) % len(names)]]] for i, name in enumerate(names)
    }
    scoped: dict[str, Retriever] = {f"beta{b:g}": retriever(beta=b) for b in [0.0, *betas]}

    recall: dict[tuple[str, int], list[float]] = {}
    public_share: dict[str, list[float]] = {}
    started = time.perf_counter()
    try:
        for index, ((name, qa), vector) in enumerate(zip(questions, vectors, strict=True)):
            owner = users[name]
            evidence = {ref.strip() for ref in qa["evidence"]}
            for label, engine in variants.items():
                found = engine.retrieve([owner], vector, qa["question"], k=args.k, now=now[name])
                share = len(evidence & {item.note.source_ref for item in found.notes}) / len(evidence)
                recall.setdefault((label, qa["category"]), []).append(share)
                recall.setdefault((label, 0), []).append(share)
            pool = {owner: "personal", **{other: "public" for other in distractors[name]}}
            for label, engine in scoped.items():
                found = engine.retrieve(list(pool), vector, qa["question"], k=args.k, scopes=pool)
                refs = {item.note.source_ref for item in found.notes if item.note.owner_id == owner}
                share = len(evidence & refs) / len(evidence)
                recall.setdefault((f"scoped.{label}", qa["category"]), []).append(share)
                recall.setdefault((f"scoped.{label}", 0), []).append(share)
                public = sum(1 for item in found.notes if item.note.owner_id != owner) / max(1, len(found.notes))
                public_share.setdefault(label, []).append(public)
            if (index + 1) % 200 == 0:
                print(f"  {index + 1}/{len(questions)} questions ({time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        store.close()

    figures: dict[str, Any] = {"locomo.questions": len(questions), "k": args.k, "fusion": tuning.fusion}
    decay_rows = []
    for label in variants:
        row: list[Any] = [label]
        for category in (1, 2, 4, 0):
            value = float(np.mean(recall[(label, category)]))
            figures[f"locomo.{label}.{CATEGORIES.get(category, 'all')}.recall_at_{args.k}"] = value
            row.append(f"{value:.3f}")
        decay_rows.append(row)
    scope_rows = []
    for label in scoped:
        value = float(np.mean(recall[(f"scoped.{label}", 0)]))
        share = float(np.mean(public_share[label]))
        figures[f"locomo_public_distractors.{prefix}-familiarity.{label}.all.recall_at_{args.k}"] = value
        figures[f"locomo_public_distractors.{prefix}-familiarity.{label}.public_share_of_top_{args.k}"] = share
        scope_rows.append([label, f"{value:.3f}", f"{share:.3f}"])
    own = float(np.mean(recall[(f"{prefix}-familiarity.no_decay", 0)]))
    headers = ["ranking", "multi-hop", "temporal", "single-hop", "all"]
    md = (
        f"## Decay in ranking: LoCoMo evidence recall@{args.k} ({len(questions)} questions, categories 1/2/4)\n\n"
        + table(headers, decay_rows)
        + f"\n\nRows: retrieval path ({prefix}"
        + (f": fusion {tuning.fusion}, dense:lexical {tuning.dense_weight}:{tuning.lexical_weight}" if fused else "")
        + f"), then `no_decay` (score = {semantic}, today's ranking) or "
        f"`decay_h<half-life>d_w<gamma>` (score = {semantic} + gamma * 2^(-age/half-life), age from the note's "
        "session date to one day after the conversation's last session). LoCoMo has no usage history, so "
        "strength here is pure recency; reinforcement by use cannot help or hurt in this data set.\n\n"
        f"## Scope term with public distractors: {prefix} familiarity recall@{args.k}\n\n"
        + table(["ranking", f"recall@{args.k}", f"public share of top-{args.k}"], scope_rows)
        + f"\n\nEach owner's pool = their conversation (personal) + two other conversations' notes labelled public. "
        f"score = {semantic} + beta * relevance (personal 1, public 0). Recall counts the owner's evidence only. "
        f"Reference without distractors ({prefix} familiarity, no decay): {own:.3f}."
    )
    path = write_results("scopes", figures, md)
    print(md)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
