"""Recollection clustering: LoCoMo evidence recall@10 with k-means vs DBSCAN vs adaptive, in one run.

.venv/bin/python -m bench.bench_clustering [--every 1] [--fusion weighted|rrf|off]

Same store and protocol as bench_retrieval's LoCoMo part (10 conversations, fast construction, one user per
conversation, the owner's pool only; categories 1/2/4 with evidence). Recollection path forced (the
clustering only matters there), K=10, default beam/fanout/rounds/candidates and ranking, fused with BM25 as the
default retrieval is (--fusion off: the dense path alone); familiarity on the same path is the reference row.
Also reports how
uneven the first-round candidate sets are (coefficient of variation of 2nd-neighbour cosine distances),
which is what `adaptive` thresholds, and how often adaptive chose DBSCAN.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from typing import Any

import numpy as np

from bench.bench_retrieval import CATEGORIES, locomo_store
from bench.common import percentiles_ms, table, write_results
from kiosk.config import load_config
from kiosk.memory import SqliteStore
from kiosk.retrieval import Retriever
from kiosk.retrieval.dbscan import density_spread
from kiosk.text import load_text_encoder

K = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1, help="use every n-th question (1 = all)")
    parser.add_argument(
        "--thresholds", default="0.25,0.15", help="adaptive density thresholds to run (first = the config default)"
    )
    parser.add_argument("--fusion", default="", help="override retrieval.fusion (default: the config's; off = dense)")
    args = parser.parse_args()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    data = config.paths.eval_data_dir / "locomo" / "locomo10.json"
    encoder = load_text_encoder(config)
    path = locomo_store(config, encoder, data)
    samples = json.loads(data.read_text())
    questions = [
        (sample["sample_id"], qa)
        for sample in samples
        for qa in sample["qa"]
        if qa.get("category") in CATEGORIES and qa.get("evidence")
    ][:: args.every]
    vectors = encoder.encode([qa["question"] for _, qa in questions])
    store = SqliteStore(path)
    retrieval = config.retrieval.model_copy(
        update={"cache_ttl_ms": 0, **({"fusion": args.fusion} if args.fusion else {})}
    )
    fused = retrieval.fusion != "off" and retrieval.lexical_weight > 0
    prefix = "fused" if fused else "dense"
    variants: dict[str, dict[str, Any]] = {
        "kmeans": {"clustering": "kmeans"},
        "dbscan": {"clustering": "dbscan"},
        "dbscan@eps_q0.8": {"clustering": "dbscan", "dbscan_eps_quantile": 0.8},
        **{f"adaptive@{t}": {"clustering": "adaptive", "density_threshold": t} for t in thresholds},
    }
    reference = "familiarity (reference)"
    recall: dict[tuple[str, int], list[float]] = {}
    elapsed: dict[str, list[float]] = {m: [] for m in variants}
    used: dict[str, Counter[str]] = {m: Counter() for m in variants}
    spreads: list[float] = []
    try:
        users = {u.name: u.id for u in store.list_users()}
        retrievers = {
            name: Retriever(store, retrieval.model_copy(update={"mode": "recollection", **update}))
            for name, update in variants.items()
        }
        retrievers[reference] = Retriever(store, retrieval.model_copy(update={"mode": "familiarity"}))
        elapsed[reference], used[reference] = [], Counter()
        for (name, qa), vector in zip(questions, vectors, strict=True):
            owners = (users[name],)
            evidence = {ref.strip() for ref in qa["evidence"]}
            pool = retrievers["kmeans"].pool(owners)
            _, _, candidates = pool.search(vector, config.retrieval.candidates)
            spreads.append(density_spread(candidates, config.retrieval.dbscan_min_samples))
            for method, retriever in retrievers.items():
                started = time.perf_counter()
                result = retriever.retrieve(owners, vector, qa["question"], k=K)
                elapsed[method].append(time.perf_counter() - started)
                found = {item.note.source_ref for item in result.notes}
                share = len(evidence & found) / len(evidence)
                recall.setdefault((method, qa["category"]), []).append(share)
                recall.setdefault((method, 0), []).append(share)
                used[method].update(result.clusterings)
    finally:
        store.close()

    def key(method: str) -> str:
        if method == reference:
            return f"locomo.{prefix}-familiarity"
        return f"locomo.{prefix}-recollection.{method}"

    figures: dict[str, Any] = {"fusion": retrieval.fusion if fused else "off"}
    rows = []
    rng = np.random.default_rng(0)
    base_all = np.asarray(recall[("kmeans", 0)])
    for method in [*variants, reference]:
        row: list[Any] = [method]
        for category in (1, 2, 4, 0):
            label = CATEGORIES.get(category, "all")
            value = float(np.mean(recall[(method, category)]))
            figures[f"{key(method)}.{label}.recall_at_10"] = value
            row.append(value)
        figures[f"{key(method)}.p50_ms"] = percentiles_ms(elapsed[method])["p50_ms"]
        total = sum(used[method].values())
        figures[f"{key(method)}.dbscan_share"] = used[method]["dbscan"] / total if total else 0.0
        difference = np.asarray(recall[(method, 0)]) - base_all
        resampled = rng.choice(difference, size=(2000, difference.size)).mean(axis=1)
        low, high = (float(v) for v in np.quantile(resampled, [0.025, 0.975]))
        figures[f"{key(method)}.all.recall_at_10_minus_kmeans"] = float(difference.mean())
        figures[f"{key(method)}.all.recall_at_10_minus_kmeans_ci95"] = [low, high]
        row += [
            f"{difference.mean():+.4f} [{low:+.4f}, {high:+.4f}]",
            f"{int((difference > 0).sum())}/{int((difference < 0).sum())}",
            f"{figures[f'{key(method)}.p50_ms']:.2f}",
            f"{figures[f'{key(method)}.dbscan_share']:.0%}" if method != reference else "",
        ]
        rows.append(row)
    quantiles = np.quantile(spreads, [0.1, 0.25, 0.5, 0.75, 0.9])
    figures["locomo.candidates.density_cv.quantiles"] = dict(
        zip(["p10", "p25", "p50", "p75", "p90"], [float(q) for q in quantiles], strict=True)
    )
    counts = Counter(qa["category"] for _, qa in questions)
    figures["locomo.questions"] = {CATEGORIES[c]: n for c, n in sorted(counts.items())}
    md = (
        table(
            [
                "clustering",
                "multi-hop R@10",
                "temporal R@10",
                "single-hop R@10",
                "all R@10",
                "all R@10 − k-means [95% bootstrap CI]",
                "questions better/worse",
                "p50 ms",
                "DBSCAN share",
            ],
            rows,
        )
        + f"\n\nQuestions: {dict(figures['locomo.questions'])}"
        + (f" (every {args.every}th)" if args.every > 1 else "")
        + f". Retrieval: {prefix} ("
        + (
            f"fusion {retrieval.fusion}, dense:lexical {retrieval.dense_weight}:{retrieval.lexical_weight}, depth "
            f"{retrieval.fusion_depth}"
            if fused
            else "dense only"
        )
        + "). Recollection forced, K=10, "
        f"beam {retrieval.beam}, candidates {retrieval.candidates}, rounds {retrieval.rounds}, "
        f"ranking {retrieval.recollection_ranking}; DBSCAN min_samples {retrieval.dbscan_min_samples}, "
        f"eps = quantile {retrieval.dbscan_eps_quantile} of the k-th-neighbour distances; adaptive@T runs "
        "DBSCAN when that spread exceeds T (config default "
        f"{retrieval.density_threshold}). The familiarity row is the same path without recollection (its "
        "difference column is familiarity − k-means recollection). DBSCAN share = share of clustering calls "
        "(per beam query per round) that ran DBSCAN (DBSCAN finding no dense group falls back to k-means).\n\n"
        "Unevenness of the first-round candidate sets (coefficient of variation of k-th-neighbour cosine "
        "distances): "
        + ", ".join(f"{k} {v:.3f}" for k, v in figures["locomo.candidates.density_cv.quantiles"].items())
        + "."
    )
    path_out = write_results("clustering", figures, md)
    print(f"wrote {path_out}")


if __name__ == "__main__":
    main()
