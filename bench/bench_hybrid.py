"""Hybrid retrieval inside the gate: dense / lexical (FTS5 BM25) / fused, with and without A-Mem attributes,
familiarity / recollection / adaptive: LoCoMo evidence recall@5/10 per category and p50 latency at 100k
notes of real dialogue text, in one run; plus the adaptive thresholds calibrated on the encoder.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_hybrid [--latency-queries 60]
                                  [--skip-latency] [--write-calibration] [--calibration-only]

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

Calibration: familiarity signals of every question against its owner's notes (related) and against the next
conversation's notes (unrelated) -> kiosk.retrieval.thresholds.derive; --write-calibration writes
calibration/adaptive-<encoder sha>.json (the shipped RetrievalConfig defaults must equal it: a test checks).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_retrieval import CACHE, FACE_DIM, SHA, TAU, locomo_store, unit_rows
from bench.common import command_line, percentiles_ms, table, write_results
from kiosk.config import RetrievalConfig, load_config
from kiosk.identity.probe import Probe
from kiosk.memory import Note, SqliteStore
from kiosk.retrieval import Retriever, gate
from kiosk.retrieval.adaptive import familiarity_signal
from kiosk.retrieval.results import FamiliaritySignal
from kiosk.retrieval.thresholds import (
    RELATED_ENTROPY_QUANTILE,
    RELATED_MEAN_QUANTILE,
    UNRELATED_MEAN_QUANTILE,
    AdaptiveCalibration,
    calibration_path,
    derive,
    text_encoder_identity,
)

CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}
PATHS = ("familiarity", "recollection", "adaptive")
SCALED_NOTES = 100_000
SCALED_USERS = 100
REPO = Path(__file__).resolve().parent.parent


def configurations(base: RetrievalConfig) -> dict[str, RetrievalConfig]:
    """Every measured configuration by name: dense-<path>, lexical, fused-<path> (fused = the config's fusion)."""
    fusion = base.fusion if base.fusion != "off" else "rrf"
    out = {f"dense-{p}": base.model_copy(update={"mode": p, "fusion": "off", "cache_ttl_ms": 0}) for p in PATHS}
    out["lexical"] = base.model_copy(update={"fusion": "rrf", "dense_weight": 0.0, "cache_ttl_ms": 0})
    for p in PATHS:
        out[f"fused-{p}"] = base.model_copy(update={"mode": p, "fusion": fusion, "cache_ttl_ms": 0})
    return out


def alternatives(base: RetrievalConfig) -> dict[str, RetrievalConfig]:
    """Fusion variants beside the default (familiarity path), measured on the with-attributes store."""
    common = {"mode": "familiarity", "cache_ttl_ms": 0}
    return {
        "rrf k60 1:1": base.model_copy(update={**common, "fusion": "rrf", "rrf_k": 60.0, "lexical_weight": 1.0}),
        "rrf k10 1:3": base.model_copy(update={**common, "fusion": "rrf", "rrf_k": 10.0, "lexical_weight": 3.0}),
        "weighted 1:1": base.model_copy(update={**common, "fusion": "weighted", "lexical_weight": 1.0}),
        "weighted 1:3": base.model_copy(update={**common, "fusion": "weighted", "lexical_weight": 3.0}),
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
                    source_ref=note.source_ref,
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
    path: Path, asked: list[tuple[str, dict[str, Any]]], vectors: np.ndarray, configs: dict[str, RetrievalConfig]
) -> tuple[dict[tuple[str, int, int], float], dict[str, float], dict[str, Counter[str]]]:
    """Mean recall per (configuration, K, category; 0 = all) and retrieval p50 ms at K=10 (600 notes / owner)."""
    recall: dict[tuple[str, int, int], list[float]] = {}
    elapsed: dict[str, list[float]] = {name: [] for name in configs}
    chosen: dict[str, Counter[str]] = {name: Counter() for name in configs}
    with SqliteStore(path) as store:
        owners = {u.name: u.id for u in store.list_users()}
        for name, config in configs.items():
            retriever = Retriever(store, config)
            for (sample, qa), vector in zip(asked, vectors, strict=True):
                evidence = {ref.strip() for ref in qa["evidence"]}
                for k in (5, 10):
                    started = time.perf_counter()
                    result = retriever.retrieve((owners[sample],), vector, qa["question"], k=k)
                    if k == 10:
                        elapsed[name].append(time.perf_counter() - started)
                        chosen[name][result.path or "none"] += 1
                    share = len(evidence & {item.note.source_ref for item in result.notes}) / len(evidence)
                    for category in (qa["category"], 0):
                        recall.setdefault((name, k, category), []).append(share)
            print(
                f"  {path.name} {name}: all R@10 {np.mean(recall[(name, 10, 0)]):.3f} ({time.strftime('%H:%M:%S')})",
                flush=True,
            )
    means = {key: float(np.mean(values)) for key, values in recall.items()}
    return means, {name: percentiles_ms(v)["p50_ms"] for name, v in elapsed.items()}, chosen


def large_k(
    path: Path, asked: list[tuple[str, dict[str, Any]]], vectors: np.ndarray, base: RetrievalConfig, k: int
) -> dict[tuple[str, int], float]:
    """Dense familiarity vs recollection recall@k per category at a larger budget (where RF-Mem expects gains)."""
    out: dict[tuple[str, int], list[float]] = {}
    with SqliteStore(path) as store:
        owners = {u.name: u.id for u in store.list_users()}
        for mode in ("familiarity", "recollection"):
            retriever = Retriever(store, base.model_copy(update={"mode": mode, "fusion": "off", "cache_ttl_ms": 0}))
            for (sample, qa), vector in zip(asked, vectors, strict=True):
                result = retriever.retrieve((owners[sample],), vector, qa["question"], k=k)
                evidence = {ref.strip() for ref in qa["evidence"]}
                share = len(evidence & {item.note.source_ref for item in result.notes}) / len(evidence)
                for category in (qa["category"], 0):
                    out.setdefault((mode, category), []).append(share)
    return {key: float(np.mean(values)) for key, values in out.items()}


def signals(
    path: Path, asked: list[tuple[str, dict[str, Any]]], vectors: np.ndarray, config: RetrievalConfig
) -> tuple[list[FamiliaritySignal], list[FamiliaritySignal]]:
    """Familiarity signal of each question against its owner's notes and against the next conversation's."""
    with SqliteStore(path) as store:
        users = store.list_users()
        matrices = {u.name: store.owner_matrix([u.id])[2] for u in users}
    names = [u.name for u in users]
    related, unrelated = [], []
    for (sample, _), vector in zip(asked, vectors, strict=True):
        stranger = names[(names.index(sample) + 1) % len(names)]
        for target, into in ((sample, related), (stranger, unrelated)):
            into.append(familiarity_signal(matrices[target] @ vector, config.k_probe, config.softmax_lambda))
    return related, unrelated


# ---- latency at 100k ---------------------------------------------------------------------------


def latency(
    path: Path,
    holds: list[int],
    asked: list[tuple[str, dict[str, Any]]],
    vectors: np.ndarray,
    configs: dict[str, RetrievalConfig],
    queries: int,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    rng = np.random.default_rng(11)
    sample_ids = sorted({sample for sample, _ in asked})
    picked = rng.choice(len(asked), size=queries, replace=False)
    identities = unit_rows(rng.standard_normal((SCALED_USERS, FACE_DIM)))
    store = SqliteStore(path)
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
            decision = gate(probe, store.templates("face"), TAU, "best-match", 0.05)
            gate_times.append(time.perf_counter() - started)
            assert decision.matched_owner_ids == (owner,), "bench probe must match its user"
        del templates
        retrievers = {name: Retriever(store, config) for name, config in configs.items()}
        for retriever in retrievers.values():  # warm pass: page cache and recollection's pools, untimed
            for _, owner, qa, vector in jobs:
                retriever.retrieve((owner,), vector, qa["question"], k=10)
        samples: dict[str, list[float]] = {name: [] for name in configs}
        for _, owner, qa, vector in jobs:  # configurations interleaved per query: machine drift hits all alike
            for name, retriever in retrievers.items():
                started = time.perf_counter()
                retriever.retrieve((owner,), vector, qa["question"], k=10)
                samples[name].append(time.perf_counter() - started)
        out = {name: percentiles_ms(values) for name, values in samples.items()}
        for name, stats in out.items():
            print(f"  100k {name}: p50 {stats['p50_ms']:.2f} ms", flush=True)
        return out, percentiles_ms(gate_times)
    finally:
        store.close()


# ---- main --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-queries", type=int, default=60)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--write-calibration", action="store_true")
    parser.add_argument("--calibration-only", action="store_true", help="derive (and write) the calibration, stop")
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
    figures: dict[str, Any] = {"locomo.questions": dict(Counter(CATEGORIES[qa["category"]] for _, qa in asked))}

    related, unrelated = signals(with_attributes, asked, vectors, base)
    theta_low, theta_high, tau_entropy = derive(related, unrelated)
    encoder_name, encoder_sha = text_encoder_identity(config)
    calibration = AdaptiveCalibration(
        encoder=encoder_name,
        encoder_sha256=encoder_sha,
        k_probe=base.k_probe,
        softmax_lambda=base.softmax_lambda,
        theta_low=theta_low,
        theta_high=theta_high,
        tau_entropy=tau_entropy,
        quantiles={
            "unrelated_mean": UNRELATED_MEAN_QUANTILE,
            "related_mean": RELATED_MEAN_QUANTILE,
            "related_entropy": RELATED_ENTROPY_QUANTILE,
        },
        samples={"related": len(related), "unrelated": len(unrelated)},
        data="LoCoMo locomo10.json questions of categories 1/2/4 vs fast-construction notes (related: the "
        "asker's conversation; unrelated: the next conversation)",
        command=command_line(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if args.write_calibration:
        target = calibration_path(REPO / "calibration", encoder_sha)
        target.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"wrote {target}", flush=True)
    if args.calibration_only:
        print(calibration.model_dump_json(indent=2))
        return
    in_use = (base.theta_low, base.theta_high, base.tau_entropy)
    figures["calibration.derived"] = {"theta_low": theta_low, "theta_high": theta_high, "tau_entropy": tau_entropy}
    figures["calibration.in_use"] = dict(zip(("theta_low", "theta_high", "tau_entropy"), in_use, strict=True))
    for label, values in (("related", related), ("unrelated", unrelated)):
        means = [s.mean_similarity for s in values]
        figures[f"calibration.{label}.mean_similarity.p05_p50_p95"] = [
            round(float(v), 4) for v in np.quantile(means, [0.05, 0.5, 0.95])
        ]

    configs = configurations(base)
    body = []
    recall_rows = []
    for variant, path in (("with", with_attributes), ("without", without_attributes)):
        recall, p50, chosen = recall_table(path, asked, vectors, configs)
        for name in configs:
            row: list[Any] = [name, variant]
            for category in (1, 2, 4, 0):
                label = CATEGORIES.get(category, "all")
                for k in (5, 10):
                    value = recall[(name, k, category)]
                    figures[f"locomo.{variant}_attributes.{name}.{label}.recall_at_{k}"] = value
                    row.append(f"{value:.3f}")
            figures[f"locomo.{variant}_attributes.{name}.p50_ms"] = p50[name]
            share = chosen[name]["recollection"] / max(1, sum(chosen[name].values()))
            figures[f"locomo.{variant}_attributes.{name}.recollection_share"] = share
            row += [f"{p50[name]:.2f}", f"{share:.0%}" if name.endswith("adaptive") else ""]
            recall_rows.append(row)
    headers = ["configuration", "A-Mem attributes"]
    for category in ("multi-hop", "temporal", "single-hop", "all"):
        headers += [f"{category} R@5", f"{category} R@10"]
    headers += ["p50 ms (K=10, ~600 notes/owner)", "adaptive → recollection"]
    body.append(
        "## LoCoMo evidence recall (LLM-free, owner's pool only, all questions of categories 1/2/4)\n\n"
        + table(headers, recall_rows)
        + f"\n\nQuestions: {figures['locomo.questions']}. dense = the RF-Mem path alone; lexical = FTS5 BM25 "
        f"alone; fused = the path's ranking fused with BM25 (fusion '{base.fusion if base.fusion != 'off' else 'rrf'}',"
        f" dense weight {base.dense_weight}, lexical weight {base.lexical_weight}, rrf_k {base.rrf_k}, depth "
        f"{base.fusion_depth}). Adaptive thresholds in use: theta_low {in_use[0]}, theta_high {in_use[1]}, "
        f"tau_H {in_use[2]} (derived in this run: {theta_low}, {theta_high}, {tau_entropy})."
    )

    alt_recall, alt_p50, _ = recall_table(with_attributes, asked, vectors, alternatives(base))
    alt_rows = []
    for name in alternatives(base):
        values = [alt_recall[(name, 10, c)] for c in (1, 2, 4, 0)]
        for category, value in zip((1, 2, 4, 0), values, strict=True):
            figures[f"locomo.fusion_variant.{name}.{CATEGORIES.get(category, 'all')}.recall_at_10"] = value
        alt_rows.append([name, *(f"{v:.3f}" for v in values), f"{alt_p50[name]:.2f}"])
    body.append(
        "## Fusion variants (familiarity path, with attributes, R@10)\n\n"
        + table(["fusion dense:lexical", "multi-hop", "temporal", "single-hop", "all", "p50 ms"], alt_rows)
    )

    deep = large_k(with_attributes, asked, vectors, base, 30)
    deep_rows = []
    for mode in ("familiarity", "recollection"):
        values = [deep[(mode, c)] for c in (1, 2, 4, 0)]
        for category, value in zip((1, 2, 4, 0), values, strict=True):
            figures[f"locomo.dense-{mode}.{CATEGORIES.get(category, 'all')}.recall_at_30"] = value
        deep_rows.append([mode, *(f"{v:.3f}" for v in values)])
    body.append(
        "## Where recollection stands at a larger budget (dense, with attributes, R@30)\n\n"
        + table(["path", "multi-hop", "temporal", "single-hop", "all"], deep_rows)
    )
    body.append(
        "## Adaptive calibration on the encoder's own scale\n\n"
        f"Mean top-{base.k_probe} similarity, p05 / p50 / p95: related "
        f"{figures['calibration.related.mean_similarity.p05_p50_p95']}, unrelated (another person's notes) "
        f"{figures['calibration.unrelated.mean_similarity.p05_p50_p95']}. Derived: theta_low = unrelated q"
        f"{UNRELATED_MEAN_QUANTILE} = {theta_low}, theta_high = related q{RELATED_MEAN_QUANTILE} = {theta_high}, "
        f"tau_H = related entropy q{RELATED_ENTROPY_QUANTILE} = {tau_entropy} (encoder {encoder_name}, sha256 "
        f"{encoder_sha[:16]}…)."
    )

    if not args.skip_latency:
        scaled, holds = scaled_store(with_attributes)
        timings, gate_stats = latency(scaled, holds, asked, vectors, configs, args.latency_queries)
        rows = []
        for name, stats in timings.items():
            figures[f"{name}.100k.p50_ms"] = stats["p50_ms"]
            figures[f"{name}.100k.p95_ms"] = stats["p95_ms"]
            rows.append([name, f"{stats['p50_ms']:.2f}", f"{stats['p95_ms']:.2f}"])
        figures["gate.100k.p50_ms"] = gate_stats["p50_ms"]
        body.append(
            f"## Retrieval latency at 100,000 notes ({SCALED_USERS} users x 1,000 notes of LoCoMo text, K=10, "
            f"{args.latency_queries} queries)\n\n"
            + table(["configuration", "retrieval p50 ms", "retrieval p95 ms"], rows)
            + f"\n\nOne untimed warm pass of every configuration first (page cache, recollection's in-RAM pools), "
            "then the configurations interleaved per query. The gate (templates from SQLite + per-user scores, "
            f"{SCALED_USERS} users) adds {gate_stats['p50_ms']:.2f} ms p50 to every row; text encoding of the "
            "question is excluded."
        )
    path = write_results("hybrid", figures, "\n\n".join(body), extra={"calibration": calibration.model_dump()})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
