"""Small builders shared by the memory tests (no models needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from kiosk.memory import EMBEDDING_DIM, Note


def unit(seed: int, dim: int = EMBEDDING_DIM) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def make_note(owner_id: int, content: str = "hello", seed: int = 0, minutes: int = 0, **extra: object) -> Note:
    return Note(
        id=None,
        owner_id=owner_id,
        modality="face",
        content=content,
        timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=UTC) + timedelta(minutes=minutes),
        embedding=unit(seed),
        **extra,  # type: ignore[arg-type]
    )


def count_rows(store: object, table: str, where: str = "", params: tuple[object, ...] = ()) -> int:
    """Rows of a table seen by an administrative query, on either backend (`?` placeholders)."""
    from kiosk.memory import SqliteStore

    if isinstance(store, SqliteStore):
        return int(store._query(f"SELECT count(*) FROM {table} {where}", params)[0][0])
    from kiosk.memory.postgres_store import PostgresStore

    assert isinstance(store, PostgresStore)
    table = "notes" if table == "note_vectors" else table  # the vector lives in the notes row there
    query = f"SELECT count(*) FROM {table} {where}".replace("?", "%s")
    return int(store._run(None, lambda cur: cur.execute(query, params).fetchone()[0]))
