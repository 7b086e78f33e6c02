"""The throwaway PostgreSQL cluster's check that its pgvector build can run on this CPU."""

from __future__ import annotations

from pathlib import Path

from kiosk.memory.pg_local import LocalCluster


def _cluster_logging(tmp_path: Path, log: str) -> LocalCluster:
    cluster = object.__new__(LocalCluster)  # no server: only the log reading is under test
    cluster.root = tmp_path
    (tmp_path / "server.log").write_text(log)
    return cluster


def test_a_backend_killed_by_an_illegal_instruction_is_recognised_in_the_log(tmp_path: Path) -> None:
    cluster = _cluster_logging(
        tmp_path,
        "LOG:  database system is ready to accept connections\n"
        "LOG:  client backend (PID 7245) was terminated by signal 4: Illegal instruction\n",
    )
    assert cluster._backend_died_of("Illegal instruction", wait_s=0.1)


def test_a_clean_log_is_not_read_as_a_crash(tmp_path: Path) -> None:
    cluster = _cluster_logging(tmp_path, "LOG:  database system is ready to accept connections\n")
    assert not cluster._backend_died_of("Illegal instruction", wait_s=0.1)


def test_the_installed_build_computes_an_embedding_distance(pg_cluster: object) -> None:
    """The session cluster passed the check (or every fleet test was skipped with its reason); it still serves."""
    import psycopg

    assert isinstance(pg_cluster, LocalCluster)
    pg_cluster.check_vector_runs()
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
        row = conn.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector").fetchone()
    assert row is not None and abs(row[0] - 1.0) < 1e-9
