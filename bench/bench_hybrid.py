"""Hybrid retrieval inside the gate: dense / lexical (FTS5 BM25) / fused, with and without A-Mem attributes:
LoCoMo evidence recall@5/10 per category and p50 latency at 100k notes of real dialogue text, in one run.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_hybrid [--latency-queries 60]
                                  [--skip-latency]

LoCoMo stores (cached in bench/cache, git-ignored):
- with attributes: bench_retrieval's fast-construction store (content + KeyBERT-style keywords + context
  "<speaker> said this on <date>"; embedded as Note.embedding_text, indexed with the date forms);
- without: the same turns with no keywords/tags/context, content-only embeddings; the FTS index still
  carries the date forms of the note's timestamp (they are the note's time, not an A-Mem attribute).
Recall@K = share of a question's evidence dia_ids among the K retrieved notes, averaged per category.

Latency store: 100,000 notes of real LoCoMo text (the fast store's notes with their embeddings), 100 users
of 1,000 notes each (user u: conversation u mod 10, then the next ones until 1,000). Queries are LoCoMo
questions asked by a user holding that conversation; timed: retrieval only (gate timed separately, text
encoding excluded: it is the same for every configuration).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_retrieval import CACHE, FACE_DIM, SHA, TAU, locomo_store, unit_rows
from bench.common import percentiles_ms, table, write_results
from kiosk.config import RetrievalConfig, load_config
from kiosk.identity.gate import GateRule, gate
from kiosk.identity.probe import Probe
from kiosk.memory import Note, SqliteStore
from kiosk.memory.store import Store
from kiosk.retrieval import Retriever
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning

CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}
DEPTHS = (10, 20, 30, 50, 100)
"""fusion_depth values swept (recall and 100k latency side by side)."""
SCALED_NOTES = 100_000
SCALED_USERS = 100


@dataclass(frozen=True)
class Variant:
    """One measured retrieval: the settings (K) and the tuning."""

    config: RetrievalConfig
    tuning: RetrievalTuning

    def retriever(self, store: Store) -> Retriever:
        return Retriever(store, self.config, tuning=self.tuning)

    def tuned(self, **changes: Any) -> Variant:
        return Variant(self.config, replace(self.tuning, **changes))


def configurations(base: Variant) -> dict[str, Variant]:
    """Every measured configuration by name: dense-familiarity, lexical, fused-familiarity (weighted fusion)."""
    uncached = base.tuned(cache_ttl_ms=0)
    return {
        "dense-familiarity": uncached.tuned(fusion="off"),
        "lexical": uncached.tuned(fusion="weighted", dense_weight=0.0),
        "fused-familiarity": uncached.tuned(fusion="weighted"),
    }


def alternatives(base: Variant) -> dict[str, Variant]:
    """Fusion weights beside the default (familiarity path), measured on the with-attributes store. (Reciprocal rank
    fusion, measured here before, found less evidence and was removed: bench/results/hybrid.md.)"""
    familiarity = base.tuned(cache_ttl_ms=0, fusion="weighted")
    return {
        "weighted 1:1": familiarity.tuned(lexical_weight=1.0),
        "weighted 1:3": familiarity.tuned(lexical_weight=3.0),
    }


# ---- stores ------------------------------------------------------------------------------------


def plain_store(encoder: Any, source: Path) -> Path:
    """The fast store's turns without A-Mem attributes, embedded from their content alone (built once)."""
    path = CACHE / "locomo-plain.db"
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    with SqliteStore(source) as fast:
        users = fast.list_users()
        notes = {u.name: fast.list_notes(u.id) for u in users}
    print("embedding the plain turns ...", flush=True)
    everything = [n for u in users for n in notes[u.name]]
    vectors = encoder.encode([n.content for n in everything])
    store = SqliteStore(partial)
    store._conn.execute("PRAGMA synchronous = OFF")  # bench fixture: rebuilt from scratch if interrupted
    ids = {u.name: store.add_user(u.name).id for u in users}
    index = 0
    for user in users:
        for note in notes[user.name]:
            store.add_note(
                Note(
                    None,
                    ids[user.name],
                    note.modality,
                    note.content,
                    note.timestamp,
                    embedding=vectors[index],
                    source=note.source,
                    source_ref=note.source_ref,
                )
            )
            index += 1
    store.checkpoint()
    store.close()
    partial.rename(path)
    return path


def scaled_store(source: Path) -> tuple[Path, list[int]]:
    """100k notes of real text: user u holds conversation u mod 10, then the next ones, up to 1,000 notes.

    Returns the path and, per user, the index of the conversation it holds in full (its questions' owner).
    """
    path = CACHE / f"hybrid-scaled-{SCALED_NOTES}-{SCALED_USERS}.db"
    with SqliteStore(source) as fast:
        users = fast.list_users()
        conversations = [fast.list_notes(u.id) for u in users]
    per_user = SCALED_NOTES // SCALED_USERS
    holds = [u % len(conversations) for u in range(SCALED_USERS)]
    if path.exists():
        return path, holds
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    store = SqliteStore(partial)
    store._conn.execute("PRAGMA synchronous = OFF")
    started = time.perf_counter()
    for u in range(SCALED_USERS):
        owner = store.add_user(f"user-{u:03d}").id
        picked: list[Note] = []
        c = holds[u]
        while len(picked) < per_user:
            picked.extend(conversations[c % len(conversations)][: per_user - len(picked)])
            c += 1
        for note in picked:
            store.add_note(
                Note(
                    None,
                    owner,
                    note.modality,
                    note.content,
                    note.timestamp,
                    keywords=note.keywords,
                    tags=note.tags,
                    context=note.context,
                    embedding=note.embedding,
                    source=note.source,
                    source_ref=f"{note.source_ref}@{note.owner_id}",  # unique per owner: two conversations fill one
                )
            )
        if (u + 1) % 10 == 0:
            print(f"  scaled store: {(u + 1) * per_user} notes ({time.perf_counter() - started:.0f} s)", flush=True)
    store.checkpoint()
    store.close()
    partial.rename(path)
    return path, holds


# ---- LoCoMo recall -----------------------------------------------------------------------------


def questions(data: Path) -> list[tuple[str, dict[str, Any]]]:
    samples = json.loads(data.read_text())
    return [
        (s["sample_id"], qa)
        for s in samples
        for qa in s["qa"]
        if qa.get("category") in CATEGORIES and qa.get("evidence")
    ]


def recall_table(
    path: Path,
    asked: list[tuple[str, dict[str, Any]]],
    vectors: np.ndarray,
    configs: dict[str, Variant],
    ks: tuple[int, ...] = (5, 10),
) -> tuple[dict[tuple[str, int, int], float], dict[str, float]]:
    """Mean recall per (configuration, K, category; 0 = all) and retrieval p50 ms at K=10 (600 notes / owner)."""
    recall: dict[tuple[str, int, int], list[float]] = {}
    elapsed: dict[str, list[float]] = {name: [] for name in configs}
    with SqliteStore(path) as store:
        owners = {u.name: u.id for u in store.list_users()}
        for name, variant in configs.items():
            retriever = variant.retriever(store)
            for (sample, qa), vector in zip(asked, vectors, strict=True):
                evidence = {ref.strip() for ref in qa["evidence"]}
                for k in ks:
                    started = time.perf_counter()
                    result = retriever.retrieve((owners[sample],), vector, qa["question"], k=k)
                    if k == 10:
                        elapsed[name].append(time.perf_counter() - started)
                    share = len(evidence & {item.note.source_ref for item in result.notes}) / len(evidence)
                    for category in (qa["category"], 0):
                        recall.setdefault((name, k, category), []).append(share)
            print(
                f"  {path.name} {name}: all R@{ks[-1]} {np.mean(recall[(name, ks[-1], 0)]):.3f} "
                f"({time.strftime('%H:%M:%S')})",
                flush=True,
            )
    means = {key: float(np.mean(values)) for key, values in recall.items()}
    p50 = {name: percentiles_ms(v)["p50_ms"] if v else float("nan") for name, v in elapsed.items()}
    return means, p50


# ---- latency at 100k ---------------------------------------------------------------------------


def latency(
    path: Path,
    holds: list[int],
    asked: list[tuple[str, dict[str, Any]]],
    vectors: np.ndarray,
    configs: dict[str, Variant],
    queries: int,
    unmapped: dict[str, Variant] | None = None,
) -> tuple[dict[str, dict[str, float]], dict[str, float], tuple[float, float], dict[str, dict[str, float]]]:
    """p50/p95 per configuration at 100k notes, the gate's, and the 1-minute load average before/after.

    `unmapped` configurations run on a second connection with SQLite's memory map off (the store before
    MMAP_BYTES), as peers in the same run.
    """
    rng = np.random.default_rng(11)
    sample_ids = sorted({sample for sample, _ in asked})
    picked = rng.choice(len(asked), size=queries, replace=False)
    identities = unit_rows(rng.standard_normal((SCALED_USERS, FACE_DIM)))
    store = SqliteStore(path)
    plain = SqliteStore(path)
    plain._conn.execute("PRAGMA mmap_size = 0")
    try:
        users = store.list_users()
        for u, user in enumerate(users):
            store.set_templates(user.id, "face", identities[u][None, :], SHA)
        jobs = []
        for q in picked:
            sample, qa = asked[int(q)]
            holders = [u for u in range(SCALED_USERS) if holds[u] == sample_ids.index(sample)]
            asker = int(rng.choice(holders))
            probe_vector = unit_rows(
                (identities[asker] + 0.15 * unit_rows(rng.standard_normal((1, FACE_DIM)))[0])[None]
            )
            jobs.append((Probe("face", probe_vector[0], SHA, captured_at=0.0), users[asker].id, qa, vectors[int(q)]))
        templates = store.templates("face")
        gate_times = []
        for probe, owner, _, _ in jobs:
            started = time.perf_counter()
            decision = gate(probe, store.templates("face"), GateRule(TAU, "best-match", 0.05))
            gate_times.append(time.perf_counter() - started)
            assert decision.matched_owner_ids == (owner,), "bench probe must match its user"
        del templates
        retrievers = {name: variant.retriever(store) for name, variant in configs.items()}
        retrievers |= {name: variant.retriever(plain) for name, variant in (unmapped or {}).items()}
        for retriever in retrievers.values():  # warm pass: page cache and the in-RAM pools, untimed
            for _, owner, qa, vector in jobs:
                retriever.retrieve((owner,), vector, qa["question"], k=10)
        samples: dict[str, list[float]] = {name: [] for name in retrievers}
        cpu: dict[str, list[float]] = {name: [] for name in retrievers}
        names = list(retrievers)
        load_before = os.getloadavg()[0]
        # Configurations interleaved per query (machine drift hits all alike), starting at a different one each
        # query: whichever runs first on a pool finds less of it in SQLite's page cache.
        for j, (_, owner, qa, vector) in enumerate(jobs):
            for name in names[j % len(names) :] + names[: j % len(names)]:
                started, cpu_started = time.perf_counter(), time.thread_time()
                retrievers[name].retrieve((owner,), vector, qa["question"], k=10)
                samples[name].append(time.perf_counter() - started)
                cpu[name].append(time.thread_time() - cpu_started)
        load_after = os.getloadavg()[0]
        out = {
            name: {**percentiles_ms(values), "cpu_p50_ms": percentiles_ms(cpu[name])["p50_ms"]}
            for name, values in samples.items()
        }
        for name, stats in out.items():
            print(f"  100k {name}: p50 {stats['p50_ms']:.2f} ms", flush=True)
        default = configs["fused-familiarity"]
        breakdown = {"mmap on": stages(store, default, jobs), "mmap off": stages(plain, default, jobs)}
        return out, percentiles_ms(gate_times), (load_before, load_after), breakdown
    finally:
        store.close()
        plain.close()


STAGES = ("knn", "lexical", "get_notes")


def stages(store: SqliteStore, variant: Variant, jobs: list[tuple[Any, int, Any, np.ndarray]]) -> dict[str, float]:
    """p50 ms of each store call inside one retrieval (dense KNN, BM25, reading the K notes) and of the rest
    (fusion, re-scoring, Python), over the jobs, for one configuration."""
    spent: dict[str, float] = {}
    originals = {name: getattr(store, name) for name in STAGES}

    def timed(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return originals[name](*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - started

        return call

    retriever = variant.retriever(store)
    per_stage: dict[str, list[float]] = {name: [] for name in (*STAGES, "rest", "total", "total CPU")}
    try:
        for name in STAGES:
            setattr(store, name, timed(name))
        for _, owner, qa, vector in jobs:
            spent.clear()
            started, cpu_started = time.perf_counter(), time.thread_time()
            retriever.retrieve((owner,), vector, qa["question"], k=10)
            total = time.perf_counter() - started
            for name in STAGES:
                per_stage[name].append(spent.get(name, 0.0))
            per_stage["rest"].append(total - sum(spent.values()))
            per_stage["total"].append(total)
            per_stage["total CPU"].append(time.thread_time() - cpu_started)
    finally:
        for name in STAGES:
            delattr(store, name)
    return {name: percentiles_ms(values)["p50_ms"] for name, values in per_stage.items()}


# ---- main --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-queries", type=int, default=60)
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    from kiosk.text import load_text_encoder

    data = config.paths.eval_data_dir / "locomo" / "locomo10.json"
    encoder = load_text_encoder(config)
    with_attributes = locomo_store(config, encoder, data)
    without_attributes = plain_store(encoder, with_attributes)
    asked = questions(data)
    vectors = encoder.encode([qa["question"] for _, qa in asked])
    base = config.retrieval
    tuning = DEFAULT_TUNING
    figures: dict[str, Any] = {"locomo.questions": dict(Counter(CATEGORIES[qa["category"]] for _, qa in asked))}
    configs = configurations(Variant(base, tuning))

    body = []
    recall_rows = []
    for variant, path in (("with", with_attributes), ("without", without_attributes)):
        recall, p50 = recall_table(path, asked, vectors, configs)
        for name in configs:
            row: list[Any] = [name, variant]
            for category in (1, 2, 4, 0):
                label = CATEGORIES.get(category, "all")
                for k in (5, 10):
                    value = recall[(name, k, category)]
                    figures[f"locomo.{variant}_attributes.{name}.{label}.recall_at_{k}"] = value
                    row.append(f"{value:.3f}")
            figures[f"locomo.{variant}_attributes.{name}.p50_ms"] = p50[name]
            row.append(f"{p50[name]:.2f}")
            recall_rows.append(row)
    headers = ["configuration", "A-Mem attributes"]
    for category_name in ("multi-hop", "temporal", "single-hop", "all"):
        headers += [f"{category_name} R@5", f"{category_name} R@10"]
    headers.append("p50 ms (K=10, ~600 notes/owner)")
    body.append(
        "## LoCoMo evidence recall (LLM-free, owner's pool only, all questions of categories 1/2/4)\n\n"
        + table(headers, recall_rows)
        + f"\n\nQuestions: {figures['locomo.questions']}. dense = the familiarity (cosine) path alone; "
        "lexical = FTS5 BM25 alone; fused = the dense ranking fused with BM25 (weighted fusion, dense weight "
        f"{tuning.dense_weight}, "
        f"lexical weight {tuning.lexical_weight}, depth {tuning.fusion_depth}). "
        "The p50 column is timed per configuration in sequence (not interleaved): see the 100k table for latency."
    )

    depth_configs = {
        f"fused-familiarity depth {d}": Variant(base, tuning).tuned(fusion_depth=d, cache_ttl_ms=0) for d in DEPTHS
    }
    depth_recall, _ = recall_table(with_attributes, asked, vectors, depth_configs, ks=(10,))
    for name in depth_configs:
        for category in (1, 2, 4, 0):
            figures[f"locomo.{name.replace(' ', '_')}.{CATEGORIES.get(category, 'all')}.recall_at_10"] = depth_recall[
                (name, 10, category)
            ]

    alt_recall, alt_p50 = recall_table(with_attributes, asked, vectors, alternatives(Variant(base, tuning)))
    alt_rows = []
    for name in alternatives(Variant(base, tuning)):
        values = [alt_recall[(name, 10, c)] for c in (1, 2, 4, 0)]
        for category, value in zip((1, 2, 4, 0), values, strict=True):
            figures[f"locomo.fusion_variant.{name}.{CATEGORIES.get(category, 'all')}.recall_at_10"] = value
        alt_rows.append([name, *(f"{v:.3f}" for v in values), f"{alt_p50[name]:.2f}"])
    body.append(
        "## Fusion variants (familiarity path, with attributes, R@10)\n\n"
        + table(["fusion dense:lexical", "multi-hop", "temporal", "single-hop", "all", "p50 ms"], alt_rows)
    )

    if not args.skip_latency:
        scaled, holds = scaled_store(with_attributes)
        timed = dict(configs)
        timed |= {name: config for name, config in depth_configs.items() if f"depth {tuning.fusion_depth}" not in name}
        unmapped = {"fused-familiarity, SQLite mmap off": configs["fused-familiarity"]}
        timings, gate_stats, load, breakdown = latency(
            scaled, holds, asked, vectors, timed, args.latency_queries, unmapped
        )
        rows = []
        for name, stats in timings.items():
            key = name.replace(" ", "_").replace(",", "")
            figures[f"{key}.100k.p50_ms"] = stats["p50_ms"]
            figures[f"{key}.100k.p95_ms"] = stats["p95_ms"]
            figures[f"{key}.100k.cpu_p50_ms"] = stats["cpu_p50_ms"]
            rows.append([name, f"{stats['p50_ms']:.2f}", f"{stats['p95_ms']:.2f}", f"{stats['cpu_p50_ms']:.2f}"])
        figures["gate.100k.p50_ms"] = gate_stats["p50_ms"]
        figures["machine.load_average_1min.before_after"] = [round(v, 2) for v in load]
        body.append(
            f"## Retrieval latency at 100,000 notes ({SCALED_USERS} users x 1,000 notes of LoCoMo text, K=10, "
            f"{args.latency_queries} queries)\n\n"
            + table(["configuration", "retrieval p50 ms", "retrieval p95 ms", "CPU time p50 ms"], rows)
            + "\n\nOne untimed warm pass of every configuration first (page cache, the in-RAM pools of "
            "dated / named search), then the configurations interleaved per query, each query starting at a "
            "different one. The gate "
            f"(templates from SQLite + per-user scores, {SCALED_USERS} users) adds {gate_stats['p50_ms']:.2f} ms p50 "
            "to every row; text encoding of the question is excluded. 1-minute load average of the 2-core machine "
            f"before / after the timed pass: {load[0]:.2f} / {load[1]:.2f}."
        )
        stage_rows = []
        for label, parts in breakdown.items():
            for name, value in parts.items():
                figures[f"fused-familiarity.100k.{label.replace(' ', '_')}.{name.replace(' ', '_')}.p50_ms"] = value
            stage_rows.append([label, *(f"{parts[name]:.2f}" for name in (*STAGES, "rest", "total", "total CPU"))])
        body.append(
            "## Where the fused default's time goes at 100k (p50 ms per part of one retrieval, same queries)\n\n"
            + table(
                [
                    "SQLite memory map",
                    "dense KNN (vec0, depth 50)",
                    "BM25 (FTS5, depth 50)",
                    "reading the K notes",
                    "rest (fusion, Python)",
                    "total",
                    "total CPU time",
                ],
                stage_rows,
            )
            + "\n\nA sequential pass after the interleaved one (each part's p50 is taken on its own, so the parts "
            "need not add up to the total's p50; wall-clock total vs CPU time shows how much was waiting for a core). "
            "The fused path costs the dense KNN plus the BM25 query, run one "
            "after the other: the over-fetch to depth 50 adds little (see the fusion_depth table), reading the K "
            "notes is shared with the dense path. These bench stores are not sealed; sealing adds about 0.2 ms to "
            "reading 10 notes (bench/results/sealing_cost.md)."
        )
        depth_rows = []
        for d, name in zip(DEPTHS, depth_configs, strict=True):
            stats = timings["fused-familiarity" if d == tuning.fusion_depth else name]
            values = [depth_recall[(name, 10, c)] for c in (1, 2, 4, 0)]
            depth_rows.append([d, *(f"{v:.3f}" for v in values), f"{stats['p50_ms']:.2f}", f"{stats['p95_ms']:.2f}"])
        body.insert(
            2,
            "## fusion_depth: recall and 100k latency side by side (fused default path)\n\n"
            + table(
                [
                    "fusion_depth",
                    "multi-hop R@10",
                    "temporal R@10",
                    "single-hop R@10",
                    "all R@10",
                    "100k p50 ms",
                    "100k p95 ms",
                ],
                depth_rows,
            )
            + f"\n\nRecall on the LoCoMo store (with attributes); latency from the 100k table below (same run). "
            f"Default fusion_depth {tuning.fusion_depth}. Peers in that run: dense-familiarity "
            f"{timings['dense-familiarity']['p50_ms']:.2f} ms, lexical {timings['lexical']['p50_ms']:.2f} ms.",
        )
    path = write_results("hybrid", figures, "\n\n".join(body))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
