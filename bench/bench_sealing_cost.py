"""Cost of encryption at rest: note ingest (add_note) and retrieval latency with and without sealing, one run.

Both stores get the same notes (LoCoMo turn texts with keyword/tag/context fields) and the same embeddings,
on disk with the production pragmas (WAL, synchronous=FULL, secure_delete). Calls alternate between the clear
and the sealed store, taking turns at going first, so machine load hits both alike. Embeddings are random
unit vectors: the text encoder is the same with or without encryption and would only dilute the ratio (real
ingest adds its encoding time on top of the figures here, so the ratio below is an upper bound for it).

.venv/bin/python -m bench.bench_sealing_cost [--notes 2000] [--queries 200] [--users 20]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from bench.common import percentiles_ms, table, write_results
from kiosk.config import RetrievalConfig, load_config
from kiosk.memory import EMBEDDING_DIM, Note, SqliteStore
from kiosk.memory.ingest import Turn, conversation_turns, load_conversations
from kiosk.retrieval.retriever import Retriever
from kiosk.retrieval.tuning import RetrievalTuning
from kiosk.security.sealing import MasterKey, new_key

T = TypeVar("T")
REPEATS = 3
"""Read-only calls are timed as the fastest of this many (ingest cannot repeat: each call adds a note)."""
TEMPLATES_PER_USER = 10
TEMPLATE_DIM = 512


def turn_texts(data_dir: Path, count: int) -> tuple[list[str], str]:
    path = data_dir / "locomo" / "locomo10.json"
    if not path.is_file():
        return [
            f"synthetic note {i}: we talked about the weekend trip and the new job" for i in range(count)
        ], "synthetic"
    texts: list[str] = []
    for index, sample in enumerate(load_conversations(path)):
        _, turns = conversation_turns(sample, index)
        texts.extend(t.text for t in turns if isinstance(t, Turn) and t.text.strip())
        if len(texts) >= count:
            break
    return (texts * (count // max(1, len(texts)) + 1))[:count], "LoCoMo turns"


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def in_turn(items: dict[str, T], index: int) -> list[tuple[str, T]]:
    """Clear first on even calls, sealed first on odd ones: neither store always runs on a warmer cache."""
    pairs = list(items.items())
    return pairs if index % 2 == 0 else pairs[::-1]


def timed(fn: Callable[[], Any], repeats: int = 1) -> float:
    """The fastest of `repeats` calls: on a shared machine the minimum is the call without preemption."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=2000, help="notes per store (one owner holds half)")
    parser.add_argument("--queries", type=int, default=200, help="retrievals per store")
    parser.add_argument("--users", type=int, default=20, help="enrolled users (templates read by the gate)")
    args = parser.parse_args()
    config = load_config()
    texts, source = turn_texts(config.paths.eval_data_dir, args.notes)
    rng = np.random.default_rng(0)
    embeddings = unit_rows(rng, args.notes, EMBEDDING_DIM)
    start = datetime(2023, 5, 8, tzinfo=UTC)

    with tempfile.TemporaryDirectory(prefix="bench-sealing-cost-") as tmp:
        stores = {
            "clear": SqliteStore(Path(tmp) / "clear.db"),
            "sealed": SqliteStore(Path(tmp) / "sealed.db", master_key=MasterKey(new_key(), "bench")),
        }
        owners: dict[str, list[int]] = {name: [] for name in stores}
        template_rows = unit_rows(rng, args.users * TEMPLATES_PER_USER, TEMPLATE_DIM)
        for name, store in stores.items():
            for u in range(args.users):
                user = store.add_user(f"user-{u}")
                owners[name].append(user.id)
                user_rows = template_rows[u * TEMPLATES_PER_USER : (u + 1) * TEMPLATES_PER_USER]
                store.set_templates(user.id, "face", user_rows, "bench")

        ingest: dict[str, list[float]] = {name: [] for name in stores}
        for i, text in enumerate(texts):
            owner_index = 0 if i % 2 == 0 else 1 + i % (args.users - 1)  # user 0 holds half the notes
            for name, store in in_turn(stores, i):
                note = Note(
                    None,
                    owners[name][owner_index],
                    "face",
                    text,
                    start + timedelta(minutes=i),
                    keywords=text.split()[:5],
                    tags=["conversation", "locomo"],
                    context=f"Said on {start + timedelta(minutes=i):%d %B %Y}: {text[:120]}",
                    embedding=embeddings[i],
                )
                ingest[name].append(timed(partial(store.add_note, note)))

        uncached = RetrievalTuning(cache_ttl_ms=0)
        retrievers = {name: Retriever(store, RetrievalConfig(), tuning=uncached) for name, store in stores.items()}
        queries = embeddings[rng.choice(args.notes, args.queries)] + 0.3 * unit_rows(rng, args.queries, EMBEDDING_DIM)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        latency: dict[str, list[float]] = {name: [] for name in stores}
        templates_s: dict[str, list[float]] = {name: [] for name in stores}
        for i, q in enumerate(queries):
            for name, retriever in in_turn(retrievers, i):
                owner = (owners[name][0],)
                latency[name].append(timed(partial(retriever.retrieve, owner, q, "q", k=10), REPEATS))
            for name, store in in_turn(stores, i):
                templates_s[name].append(timed(partial(store.templates, "face"), REPEATS))
        for store in stores.values():
            store.close()

    figures: dict[str, Any] = {"source": source, "notes": args.notes, "queries": args.queries, "users": args.users}
    rows: list[list[Any]] = []

    def add(metric: str, samples: dict[str, list[float]]) -> None:
        clear, sealed = percentiles_ms(samples["clear"]), percentiles_ms(samples["sealed"])
        ratio = sealed["p50_ms"] / clear["p50_ms"]
        paired = float(np.median(np.asarray(samples["sealed"]) / np.asarray(samples["clear"])))
        figures[f"{metric}.clear.p50_ms"], figures[f"{metric}.sealed.p50_ms"] = clear["p50_ms"], sealed["p50_ms"]
        figures[f"{metric}.clear.p95_ms"], figures[f"{metric}.sealed.p95_ms"] = clear["p95_ms"], sealed["p95_ms"]
        figures[f"{metric}.sealed_over_clear.p50_ratio"] = ratio
        figures[f"{metric}.sealed_over_clear.paired_median_ratio"] = paired
        rows.append(
            [metric, clear["p50_ms"], sealed["p50_ms"], clear["p95_ms"], sealed["p95_ms"], ratio, paired, clear["n"]]
        )

    add("ingest.add_note", ingest)
    add(f"retrieval.familiarity.{args.notes // 2}_notes.k10", latency)
    add(f"gate.templates.{args.users}x{TEMPLATES_PER_USER}", templates_s)
    body = (
        f"{args.notes} notes ({source}) in each store, {args.users} users with {TEMPLATES_PER_USER} face templates "
        f"each; retrieval over the owner holding {args.notes // 2} notes, k = 10, result cache off, "
        f"{args.queries} queries. Calls alternate between the stores; read-only calls are timed as the "
        f"fastest of {REPEATS}; the paired ratio compares the two stores on the same note or query.\n\n"
        + table(
            [
                "operation",
                "clear p50 ms",
                "sealed p50 ms",
                "clear p95 ms",
                "sealed p95 ms",
                "ratio of p50s",
                "median paired ratio",
                "n",
            ],
            rows,
        )
        + "\n\nSealing = AES-256-GCM of content, keywords, tags and context per note (4 values) with the owner's "
        "data key; retrieval opens the k returned notes; the gate opens every template it compares. "
        "Vectors (vec0, notes.embedding) are stored in clear, so KNN itself costs the same. Ingest times include "
        "the fsync of synchronous=FULL; real ingest adds the text encoder on top (see ingest.md), so the "
        "full-ingest ratio is closer to 1 than the store-level ratio here."
    )
    write_results("sealing_cost", figures, body)
    print(body)


if __name__ == "__main__":
    main()
