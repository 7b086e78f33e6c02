"""Row mapping shared by both SQL stores: rows of users, notes, links and history -> records, and the note
columns every store reads in the same order.

Owners are rows of `users` of three kinds: people, groups and the public scope (the pseudo-owners of group and
public notes), so a note's scope is the kind of its owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kiosk.memory.note import EMBEDDING_DIM, Group, Link, Note, User, from_epoch

PERSON, GROUP, PUBLIC = "person", "group", "public"
GROUP_PREFIX = "group:"
PUBLIC_NAME = "scope:public"
RESERVED_PREFIXES = (GROUP_PREFIX, "scope:")
"""Groups and the public scope are rows of `users` under these names; people cannot take them."""

NOTE_COLUMNS = (
    "n.id, n.owner_id, n.modality, n.content, n.timestamp, n.keywords, n.tags, n.context, n.embedding, "
    "n.source, n.source_ref, n.created_at, n.updated_at, n.author_id, n.last_used_at, n.reinforcements, "
    "n.archived_at, u.kind, u.name, n.sensitivity"
)
"""The note columns both stores read, in the order `note_from_row` maps them (a store appends its sealing ones)."""
NOTES_WITH_OWNER = "notes n JOIN users u ON u.id = n.owner_id LEFT JOIN user_keys k ON k.user_id = n.owner_id"
"""With the owner (for the scope) and the owner's wrapped data key (to open sealed fields without another query)."""


@dataclass(frozen=True)
class NoteText:
    """The fields of a note that are sealed at rest."""

    content: str
    keywords: list[str]
    tags: list[str]
    context: str

    @classmethod
    def of(cls, note: Note) -> NoteText:
        return cls(note.content, note.keywords, note.tags, note.context)


def scope_of(kind: str, name: str) -> str:
    if kind == GROUP:
        return name  # stored as "group:NAME", which is the scope's own spelling
    return "public" if kind == PUBLIC else "personal"


def epoch_or_none(value: Any) -> Any:
    return None if value is None else from_epoch(value)


def note_from_row(row: Sequence[Any], text: NoteText, embedding: np.ndarray, links: list[Link]) -> Note:
    """A note from a row of `NOTE_COLUMNS`, with its opened text and its decoded embedding."""
    return Note(
        id=int(row[0]),
        owner_id=int(row[1]),
        modality=row[2],
        content=text.content,
        timestamp=from_epoch(row[4]),
        keywords=list(text.keywords),
        tags=list(text.tags),
        context=text.context,
        embedding=embedding,
        links=links,
        source=row[9],
        source_ref=row[10],
        created_at=from_epoch(row[11]),
        updated_at=from_epoch(row[12]),
        scope=scope_of(row[17], row[18]),
        author_id=None if row[13] is None else int(row[13]),
        last_used_at=epoch_or_none(row[14]),
        reinforcements=int(row[15]),
        archived_at=epoch_or_none(row[16]),
        sensitivity=row[19],
    )


def user_from_row(row: Sequence[Any]) -> User:
    return User(int(row[0]), row[1], from_epoch(row[2]))


def group_from_row(row: Sequence[Any]) -> Group:
    return Group(int(row[0]), str(row[1])[len(GROUP_PREFIX) :], from_epoch(row[2]))


def vector_from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32).copy()


def links_by_source(rows: Iterable[Sequence[Any]]) -> dict[int, list[Link]]:
    """(source, target, kind) rows, ordered by source then target -> each source's links."""
    out: dict[int, list[Link]] = {}
    for source, target, kind in rows:
        out.setdefault(int(source), []).append(Link(int(target), kind))
    return out


def best_first(pairs: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """(note id, score) pairs by score, highest first; ties by id."""
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))


def retention_arrays(rows: Sequence[Sequence[Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(id, last use epoch s, reinforcements) rows -> three arrays."""
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    used = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    counts = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
    return ids, used, counts


def pool_arrays(
    rows: Sequence[Sequence[Any]], matrix: Callable[[list[Any]], np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(id, timestamp, embedding) rows -> ids, timestamps and the (n, 384) float32 matrix `matrix` builds."""
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    stamps = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    if not rows:
        return ids, stamps, np.zeros((0, EMBEDDING_DIM), np.float32)
    return ids, stamps, matrix([r[2] for r in rows])
