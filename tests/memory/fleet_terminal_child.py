"""Child process of the multi-terminal test: one kiosk terminal writing and reading the shared fleet store.

Prints one JSON line: the notes it stored (own user and shared user), the links it made and the number of
owner-restriction violations it saw in its own queries (must be 0).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta

import numpy as np

from kiosk.memory import Note
from kiosk.memory.postgres_store import PostgresStore


def main(url: str, terminal: int, rounds: int) -> None:
    rng = np.random.default_rng(terminal)
    store = PostgresStore(url)
    own = store.user_by_name(f"solo{terminal}")
    shared = store.user_by_name("shared")
    assert own is not None and shared is not None
    anchor = store.list_notes(shared.id, limit=1)[0].id
    assert anchor is not None
    stored: dict[str, list[int]] = {"own": [], "shared": []}
    links: list[tuple[int, int]] = []
    violations = 0
    for i in range(rounds):
        for kind, owner in (("own", own.id), ("shared", shared.id)):
            vector = rng.standard_normal(384).astype(np.float32)
            note = Note(
                id=None,
                owner_id=owner,
                modality="face",
                content=f"terminal {terminal} {kind} note {i}",
                timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
                embedding=vector / np.linalg.norm(vector),
            )
            key = f"t{terminal}-{kind}-{i}"
            note_id = store.add_note(note, idempotency_key=key).id
            assert note_id is not None
            if i % 5 == 0:  # a retry after a lost acknowledgement: the same key again
                assert store.add_note(note, idempotency_key=key).id == note_id
            stored[kind].append(note_id)
            found = store.knn([owner], note.embedding, 5)  # type: ignore[arg-type]
            violations += sum(1 for n in store.get_notes([nid for nid, _ in found]) if n.owner_id != owner)
            if kind == "shared":
                store.add_link(note_id, anchor, "related")  # every terminal links to the same anchor at once
                links.append((note_id, anchor))
                if found and found[0][0] != note_id:
                    store.add_link(note_id, found[0][0], "similar")
                    links.append((note_id, found[0][0]))
    store.close()
    print(json.dumps({"stored": stored, "links": links, "violations": violations}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
