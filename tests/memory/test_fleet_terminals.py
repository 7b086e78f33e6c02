"""Several terminals (processes) on one fleet store at once: nothing lost, nothing doubled, owners kept apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg

from kiosk.memory.postgres_store import PostgresStore

from .builders import make_note

TERMINALS = 4
ROUNDS = 25


def test_four_terminals_ingest_and_query_without_lost_notes_or_duplicate_links(
    pg_database: tuple[str, str],
) -> None:
    admin_url, terminal_url = pg_database
    with PostgresStore(terminal_url) as setup:
        for t in range(TERMINALS):
            setup.add_user(f"solo{t}")
        shared = setup.add_user("shared").id
        setup.add_note(make_note(shared, "the anchor every terminal links to", seed=1))
        shared_version = setup.owner_version(shared)
    child = Path(__file__).with_name("fleet_terminal_child.py")
    root = Path(__file__).resolve().parents[2]
    processes = [
        subprocess.Popen(
            [sys.executable, str(child), terminal_url, str(t), str(ROUNDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        )
        for t in range(TERMINALS)
    ]
    reports = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))

    assert all(r["violations"] == 0 for r in reports)
    with PostgresStore(terminal_url) as store:
        for t, report in enumerate(reports):
            own = store.user_by_name(f"solo{t}")
            assert own is not None
            assert sorted(n.id for n in store.list_notes(own.id)) == sorted(report["stored"]["own"])
        shared_ids = {n.id for n in store.list_notes(shared)}
        written = {i for r in reports for i in r["stored"]["shared"]}
        assert len(written) == TERMINALS * ROUNDS and written < shared_ids and len(shared_ids) == len(written) + 1
        made = {tuple(sorted(pair)) for r in reports for pair in r["links"]}
        link_count = sum(1 for r in reports for _ in r["links"])
        # Every add_note and add_link bumped the owner's version exactly once: no lost update under contention.
        assert store.owner_version(shared) == shared_version + len(written) + link_count
    with psycopg.connect(admin_url) as admin:
        rows = admin.execute("SELECT source_id, target_id FROM links").fetchall()
        assert len(rows) == len(set(rows)) == 2 * len(made)
        assert {tuple(sorted(r)) for r in rows} == made
        assert all((b, a) in set(rows) for a, b in rows)
        assert admin.execute("SELECT count(*) FROM notes").fetchone() == (TERMINALS * ROUNDS * 2 + 1,)
