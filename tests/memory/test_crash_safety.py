"""A writer killed with SIGKILL at random points never loses a note whose add_note returned."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kiosk.memory import SqliteStore

CHILD = Path(__file__).with_name("crash_child.py")
KILLS = 22


def _run_and_kill(db: Path, seed: int, acks_before_kill: int, rng: random.Random) -> list[int]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(db), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acked: list[int] = []
    reader = threading.Thread(target=lambda: acked.extend(int(line) for line in child.stdout or []))  # type: ignore[misc]
    reader.start()
    deadline = time.monotonic() + 60
    while len(acked) < acks_before_kill and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(rng.uniform(0, 0.02))  # land anywhere inside the next transaction
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join()
    stderr = child.stderr.read() if child.stderr else ""
    assert child.returncode == -signal.SIGKILL, f"child ended by itself: {stderr[-2000:]}"
    return acked


@pytest.mark.slow
def test_sigkill_never_loses_a_committed_note(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    rng = random.Random(1234)
    acked_total: list[int] = []
    for run in range(KILLS):
        acked = _run_and_kill(db, seed=run, acks_before_kill=rng.randint(0, 25), rng=rng)
        acked_total.extend(acked)
        store = SqliteStore(db)
        try:
            assert store.integrity_check() == "ok", f"run {run}"
            present = {n.id for n in store.get_notes(acked_total)}
            missing = sorted(set(acked_total) - present)
            assert not missing, f"run {run}: acknowledged notes lost: {missing[:10]}"
            notes = store._query("SELECT count(*) FROM notes")[0][0]
            vectors = store._query("SELECT count(*) FROM note_vectors")[0][0]
            assert notes == vectors, f"run {run}: {notes} notes but {vectors} vectors"
            dangling = store._query(
                "SELECT count(*) FROM links WHERE target_id NOT IN (SELECT id FROM notes) "
                "OR source_id NOT IN (SELECT id FROM notes)"
            )[0][0]
            assert dangling == 0
        finally:
            store.close()
    assert len(acked_total) > KILLS  # the children really wrote between kills
