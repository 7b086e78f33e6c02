"""Child process for the crash-safety test: writes notes forever, printing each id once add_note returned."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

import numpy as np

from kiosk.memory import Note, SqliteStore


def main(path: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    store = SqliteStore(path)
    user = store.user_by_name("crash") or store.add_user("crash")
    previous: list[int] = []
    for i in range(100_000):
        vector = rng.standard_normal(384).astype(np.float32)
        note = Note(
            id=None,
            owner_id=user.id,
            modality="face",
            content=f"note {seed}-{i} " + "x" * int(rng.integers(0, 2000)),
            timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
            keywords=["crash", str(i)],
            embedding=vector / np.linalg.norm(vector),
            source="test",
            source_ref=f"{seed}:{i}",
        )
        stored = store.add_note(note)
        assert stored.id is not None
        print(stored.id, flush=True)
        if previous and i % 3 == 0:
            store.add_link(stored.id, previous[-1], "related")
        if previous and i % 4 == 0:
            older = store.get_note(previous[int(rng.integers(0, len(previous)))])
            if older is not None:
                older.tags = [f"t{i}"]
                store.update_note(older, reason="crash-test")
        previous.append(stored.id)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
