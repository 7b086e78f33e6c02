"""Identity-gated retrieval: latency of the (fused) familiarity path vs a numpy brute force, and LLM-free
evidence recall@5/10 on LoCoMo, in one run.

.venv/bin/python -m bench.bench_retrieval [--sizes 1000,10000,100000] [--users 10,100] [--queries 60]
                                          [--skip-latency] [--skip-locomo]

Latency stores hold synthetic unit vectors (topic centroids plus noise, so similarities spread like real
ones); they are built once and cached under bench/cache/ (git-ignored). Each query is timed end to end
from the probe: gate (templates from SQLite, per-user scores) + retrieval inside the matched partitions;
text encoding is excluded (see bench/results/text_encoder.md). The brute-force
baseline holds every note's vector and owner in RAM and applies the per-note gate formula, then a cosine
top-K over the passing notes: the literal formula, vectorised.

LoCoMo: the 10 conversations imported with the memory helper's fast construction (no LLM), one user per
conversation, each user with a synthetic face template; the owner's probe opens only that conversation.
Recall@K = share of a question's evidence dia_ids among the retrieved notes' source refs, averaged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles_ms, table, write_results
from kiosk.config import KioskConfig, RetrievalConfig, load_config
from kiosk.identity.gate import GateRule, gate
from kiosk.identity.probe import Probe
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.retrieval import Retriever
from kiosk.retrieval.tuning import DEFAULT_TUNING
from kiosk.security.backoff import no_backoff

CACHE = Path(__file__).resolve().parent / "cache"
SHA = "bench-synthetic-face-encoder"
FACE_DIM = 512
TOPICS = 64
TAU = 0.5
PATHS = ("familiarity",)
UNCACHED = replace(DEFAULT_TUNING, cache_ttl_ms=0)  # every timed retrieval runs in full
CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


# ---- synthetic stores --------------------------------------------------------------------------


def synthetic_world(notes: int, users: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    topics = unit_rows(rng.standard_normal((TOPICS, EMBEDDING_DIM)))
    topic_of = rng.integers(0, TOPICS, notes)
    embeddings = unit_rows(topics[topic_of] + 0.9 * unit_rows(rng.standard_normal((notes, EMBEDDING_DIM))))
    owners = rng.integers(0, users, notes)
    identities = unit_rows(rng.standard_normal((users, FACE_DIM)))
    templates = unit_rows(
        np.repeat(identities, 3, axis=0) + 0.25 * unit_rows(rng.standard_normal((users * 3, FACE_DIM)))
    )
    return {
        "embeddings": embeddings,
        "owners": owners,
        "minutes": rng.integers(0, 600_000, notes),
        "identities": identities,
        "templates": templates,
    }


def build_store(path: Path, notes: int, users: int) -> None:
    """Build the cached store once (into a temp file renamed at the end, so a killed build never counts)."""
    world = synthetic_world(notes, users)
    partial = path.with_suffix(".partial")
    for leftover in CACHE.glob(partial.name + "*"):
        leftover.unlink()
    store = SqliteStore(partial)
    # Bench fixture only: without per-commit fsync the 100k store builds in minutes instead of an hour.
    store._conn.execute("PRAGMA synchronous = OFF")
    user_ids = [store.add_user(f"user-{u:03d}").id for u in range(users)]
    for u, user_id in enumerate(user_ids):
        store.set_templates(user_id, "face", world["templates"][3 * u : 3 * u + 3], SHA)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    for i in range(notes):
        store.add_note(
            Note(
                id=None,
                owner_id=user_ids[int(world["owners"][i])],
                modality="face",
                content=f"synthetic note {i}",
                timestamp=start + timedelta(minutes=int(world["minutes"][i])),
                embedding=world["embeddings"][i],
            )
        )
        if (i + 1) % 20_000 == 0:
            print(f"  {path.name}: {i + 1}/{notes} notes ({time.perf_counter() - started:.0f} s)", flush=True)
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(str(partial) + suffix).unlink(missing_ok=True)
    partial.rename(path)


def cached_store(notes: int, users: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"retrieval-{notes}-{users}.db"
    if not path.exists():
        print(f"building {path.name} ...", flush=True)
        started = time.perf_counter()
        build_store(path, notes, users)
        print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)
    return path


def brute_force(
    probe: np.ndarray,
    templates: np.ndarray,
    template_owner: np.ndarray,
    note_owner: np.ndarray,
    embeddings: np.ndarray,
    query: np.ndarray,
    k: int,
) -> np.ndarray:
    """Per-note gate over every note (via its owner's templates), then cosine top-K of the passing notes."""
    template_scores = templates @ probe
    owner_best = np.full(int(template_owner.max()) + 1, -np.inf)
    np.maximum.at(owner_best, template_owner, template_scores)
    passing = owner_best[note_owner] >= TAU
    sims = np.where(passing, embeddings @ query, -np.inf)
    top = np.argpartition(-sims, k)[:k]
    return top[np.isfinite(sims[top])]


def latency(sizes: list[int], user_counts: list[int], queries: int, k: int) -> tuple[dict[str, Any], list[list[Any]]]:
    figures: dict[str, Any] = {}
    rows: list[list[Any]] = []
    for notes in sizes:
        for users in user_counts:
            path = cached_store(notes, users)
            world = synthetic_world(notes, users)
            store = SqliteStore(path)
            try:
                figures.update(_latency_one(store, world, notes, users, queries, k, rows))
            finally:
                store.close()
    return figures, rows


def _latency_one(
    store: SqliteStore,
    world: dict[str, np.ndarray],
    notes: int,
    users: int,
    queries: int,
    k: int,
    rows: list[list[Any]],
) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    user_rows = store.list_users()
    askers = rng.integers(0, users, queries)
    probes = unit_rows(world["identities"][askers] + 0.15 * unit_rows(rng.standard_normal((queries, FACE_DIM))))
    # A question resembles one of the asker's own notes (or any note when the asker has none).
    query_rows = []
    for asker in askers:
        own = np.flatnonzero(world["owners"] == asker)
        anchor = world["embeddings"][int(rng.choice(own)) if own.size else int(rng.integers(notes))]
        query_rows.append(anchor + 0.8 * unit_rows(rng.standard_normal((1, EMBEDDING_DIM)))[0])
    query_vectors = unit_rows(np.stack(query_rows))
    key = f"{notes // 1000}k.{users}u"
    out: dict[str, Any] = {}

    def run_path() -> list[float]:
        retriever = Retriever(store, RetrievalConfig(), tuning=UNCACHED)
        samples = []
        for i in range(-3, queries):  # three warm-up queries
            q = i % queries
            probe = Probe("face", probes[q], SHA, captured_at=0.0)
            started = time.perf_counter()
            decision = gate(probe, store.templates("face"), GateRule(TAU, "best-match", 0.05))
            retriever.retrieve(decision.matched_owner_ids, query_vectors[q], f"q{q}", k=k)
            elapsed = time.perf_counter() - started
            if i >= 0:
                samples.append(elapsed)
            assert set(decision.matched_owner_ids) == {user_rows[int(askers[q])].id}, "bench probe must match"
        return samples

    stats = percentiles_ms(run_path())
    out[f"familiarity.{key}.p50_ms"] = stats["p50_ms"]
    out[f"familiarity.{key}.p95_ms"] = stats["p95_ms"]

    # Cold pool load (a dated or named search's first query for an owner after a write) and a cache hit.
    retriever = Retriever(store, RetrievalConfig())
    owner = user_rows[int(askers[0])].id
    started = time.perf_counter()
    retriever.pool((owner,))
    out[f"pool.{key}.cold_load_ms"] = (time.perf_counter() - started) * 1000.0
    cached = Retriever(store, RetrievalConfig(), tuning=replace(DEFAULT_TUNING, cache_ttl_ms=60_000))
    cached.retrieve((owner,), query_vectors[0], "same question", k=k)
    hits = []
    for _ in range(queries):
        started = time.perf_counter()
        assert cached.retrieve((owner,), query_vectors[0], "same question", k=k).cache_hit
        hits.append(time.perf_counter() - started)
    out[f"familiarity_cached.{key}.p50_ms"] = percentiles_ms(hits)["p50_ms"]

    template_owner = np.repeat(np.arange(users), 3)
    brute = []
    for q in range(queries):
        started = time.perf_counter()
        brute_force(
            probes[q], world["templates"], template_owner, world["owners"], world["embeddings"], query_vectors[q], k
        )
        brute.append(time.perf_counter() - started)
    stats = percentiles_ms(brute)
    out[f"brute_force.{key}.p50_ms"] = stats["p50_ms"]
    out[f"brute_force.{key}.p95_ms"] = stats["p95_ms"]
    rows.append(
        [
            f"{notes:,}",
            users,
            *(f"{out[f'{m}.{key}.p50_ms']:.2f} / {out[f'{m}.{key}.p95_ms']:.2f}" for m in (*PATHS, "brute_force")),
            f"{out[f'pool.{key}.cold_load_ms']:.1f}",
            f"{out[f'familiarity_cached.{key}.p50_ms']:.3f}",
        ]
    )
    print(rows[-1], flush=True)
    return out


# ---- LoCoMo ------------------------------------------------------------------------------------


def locomo_store(config: KioskConfig, encoder: Any, data: Path) -> Path:
    """The 10 conversations imported once with fast construction; resumable (the import skips done refs)."""
    from kiosk.memory.build import NoteBuilder, construction_settings
    from kiosk.memory.ingest import import_conversations

    CACHE.mkdir(parents=True, exist_ok=True)
    # Keyed by the note-construction settings: a store built under other settings holds other notes.
    settings = hashlib.sha256(json.dumps(construction_settings(config.memory), sort_keys=True).encode()).hexdigest()
    path = CACHE / f"locomo-fast-{settings[:12]}.db"
    done = path.with_suffix(".done")
    if path.exists() and done.exists():
        return path
    store = SqliteStore(path)
    try:
        builder = NoteBuilder(store, encoder, config.memory, None)
        started = time.perf_counter()

        def progress(count: int, total: int) -> None:
            if count % 500 == 0 or count == total:
                print(f"  locomo import {count}/{total} ({time.perf_counter() - started:.0f} s)", flush=True)

        report = import_conversations(data, builder, store, mode="fast", progress=progress)
        print(f"  imported {report.added} notes, {report.skipped} already there, {report.failed} failed", flush=True)
        if report.failed:
            raise SystemExit(f"LoCoMo import failed for {report.failed} turns: {report.errors[:3]}")
    finally:
        store.close()
    done.write_text(datetime.now(UTC).isoformat())
    return path


def locomo_recall(config: KioskConfig, data_dir: Path) -> tuple[dict[str, Any], str]:
    from kiosk.app.build import build_assistant
    from kiosk.text import load_text_encoder

    data = data_dir / "locomo" / "locomo10.json"
    encoder = load_text_encoder(config)
    path = locomo_store(config, encoder, data)
    samples = json.loads(data.read_text())
    store = SqliteStore(path)
    rng = np.random.default_rng(7)
    try:
        users = {u.name: u for u in store.list_users()}
        identity: dict[str, np.ndarray] = {}
        for sample in samples:
            name = sample["sample_id"]
            identity[name] = unit_rows(rng.standard_normal((1, FACE_DIM)))[0]
            store.set_templates(users[name].id, "face", identity[name][None, :], SHA)
        questions = [
            (sample["sample_id"], qa)
            for sample in samples
            for qa in sample["qa"]
            if qa.get("category") in CATEGORIES and qa.get("evidence")
        ]
        texts = [qa["question"] for _, qa in questions]
        vectors = encoder.encode(texts)
        assistant = build_assistant(config, store, encoder, thresholds={"face": TAU}, backoff=no_backoff())
        recall: dict[tuple[str, int, int], list[float]] = {}
        elapsed: dict[str, list[float]] = {m: [] for m in PATHS}
        for (name, qa), vector in zip(questions, vectors, strict=True):
            probe_vector = unit_rows((identity[name] + 0.15 * unit_rows(rng.standard_normal((1, FACE_DIM)))[0])[None])[
                0
            ]
            probe = Probe("face", probe_vector, SHA, captured_at=0.0)
            decision = assistant.verify(probe)
            assert decision.matched_owner_ids == (users[name].id,)
            evidence = {ref.strip() for ref in qa["evidence"]}
            for variant in PATHS:
                for k in (5, 10):
                    started = time.perf_counter()
                    result = assistant.retriever.retrieve(decision.matched_owner_ids, vector, qa["question"], k=k)
                    if k == 10:
                        elapsed[variant].append(time.perf_counter() - started)
                    refs = {item.note.source_ref for item in result.notes}
                    share = len(evidence & refs) / len(evidence)
                    recall.setdefault((variant, k, qa["category"]), []).append(share)
                    recall.setdefault((variant, k, 0), []).append(share)
    finally:
        store.close()
    figures: dict[str, Any] = {}
    rows = []
    for variant in PATHS:
        row: list[Any] = [variant]
        for category in (1, 2, 4, 0):
            label = CATEGORIES.get(category, "all")
            for k in (5, 10):
                value = float(np.mean(recall[(variant, k, category)]))
                figures[f"locomo.{variant}.{label}.recall@{k}"] = value
                row.append(f"{value:.3f}")
        figures[f"locomo.{variant}.p50_ms"] = percentiles_ms(elapsed[variant])["p50_ms"]
        row.append(f"{figures[f'locomo.{variant}.p50_ms']:.2f}")
        rows.append(row)
    counts = Counter(qa["category"] for _, qa in questions)
    figures["locomo.questions"] = {CATEGORIES[c]: n for c, n in sorted(counts.items())}
    headers = ["path"]
    for category_name in ("multi-hop", "temporal", "single-hop", "all"):
        headers += [f"{category_name} R@5", f"{category_name} R@10"]
    headers.append("p50 ms (K=10)")
    md = table(headers, rows)
    md += f"\n\nQuestions (categories 1/2/4 with evidence): {dict(figures['locomo.questions'])}."
    return figures, md


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--users", default="10,100")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-locomo", action="store_true")
    args = parser.parse_args()
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    figures: dict[str, Any] = {}
    body = []
    if not args.skip_latency:
        sizes = [int(s) for s in args.sizes.split(",")]
        user_counts = [int(u) for u in args.users.split(",")]
        lat, rows = latency(sizes, user_counts, args.queries, args.k)
        figures.update(lat)
        headers = [
            "notes",
            "users",
            *(f"{m} p50 / p95 ms" for m in (*PATHS, "brute_force")),
            "pool cold load ms (dated / named search)",
            "familiarity cache hit p50 ms",
        ]
        body.append(
            f"## Latency (K={args.k}, {args.queries} queries per cell, gate + retrieval, text encoding excluded)\n\n"
            + table(headers, rows)
            + "\n\nfamiliarity searches the matched owner's sqlite-vec partition; a dated or named search runs on the "
            "matched owner's embeddings held in RAM (loaded once per owner version: the cold column). "
            "brute_force: every note's vector in RAM, the per-note gate formula, then a cosine top-K (numpy)."
        )
    if not args.skip_locomo:
        lo, md = locomo_recall(config, config.paths.eval_data_dir)
        figures.update(lo)
        body.append("## LoCoMo evidence recall (LLM-free, owner probe, fast construction)\n\n" + md)
    path = write_results("retrieval", figures, "\n\n".join(body))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
