"""What every store checks before it writes, and what a note update records in the note's history."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kiosk.errors import KioskError, StoreError
from kiosk.memory.note import EMBEDDING_DIM, Note, to_epoch
from kiosk.memory.records import RESERVED_PREFIXES

TRACKED_FIELDS = ("content", "timestamp", "keywords", "tags", "context", "modality", "sensitivity")
"""The note fields whose changes a history entry records."""


def as_vector(vector: np.ndarray, what: str, dimension: int | None = EMBEDDING_DIM) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or (dimension is not None and array.shape[0] != dimension):
        expected = f"({dimension},)" if dimension is not None else "a 1-d vector"
        raise StoreError(f"{what} has shape {array.shape}, expected {expected}", "pass one float32 vector")
    if not np.all(np.isfinite(array)):
        raise StoreError(f"{what} contains NaN or infinity", "check the encoder output")
    if not np.any(array):
        raise StoreError(f"{what} is all zeros", "a zero vector has no direction to compare")
    return array


def checked_sensitivity(value: str | None) -> str | None:
    from kiosk.memory.sensitivity import validate_category

    try:
        return validate_category(value)
    except KioskError as exc:
        raise StoreError(exc.message, exc.hint) from exc


def person_name(name: str) -> str:
    from kiosk.identity.names import person_name as checked_person_name

    try:
        clean = checked_person_name(name)
    except KioskError as exc:
        raise StoreError(exc.message, exc.hint) from exc
    if clean.casefold().startswith(RESERVED_PREFIXES):
        raise StoreError(f"'{clean}' looks like a scope name", "people's names cannot start with group: or scope:")
    return clean


def refuse_look_alike_user(name: str, existing: list[str]) -> None:
    """StoreError when a new person's name differs from an existing person's only in case or spacing."""
    from kiosk.identity.names import refuse_look_alike

    try:
        refuse_look_alike(name, existing)
    except KioskError as exc:
        raise StoreError(exc.message, exc.hint) from exc


def group_name(name: str) -> str:
    clean = name.strip()
    if not clean or ":" in clean:
        raise StoreError(f"'{name}' is not a usable group name", "give a non-empty name without ':'")
    return clean


def check_k(k: int, max_k: int | None = None) -> None:
    if k < 1 or (max_k is not None and k > max_k):
        raise StoreError(f"k={k} is out of range", f"use 1..{max_k}" if max_k is not None else "use k >= 1")


def template_vectors(vectors: np.ndarray, modality: str) -> list[np.ndarray]:
    """The rows of an (n, d) array (or one vector) of templates, each checked."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise StoreError(f"templates have shape {matrix.shape}, expected (n, d) with n >= 1", "pass an (n, d) array")
    return [as_vector(row, f"{modality} template", dimension=None) for row in matrix]


def validate_new_note(note: Note) -> tuple[np.ndarray, str | None]:
    """The checks add_note makes before touching the database (also before a note is queued offline): the
    note's embedding and its sensitivity as stored."""
    if note.id is not None:
        raise StoreError(f"note already has id {note.id}", "use update_note for stored notes")
    if not note.content.strip():
        raise StoreError("a note needs non-empty content", "give some text")
    if note.embedding is None:
        raise StoreError("a note needs its embedding before it is stored", "build notes with kiosk.memory.build")
    to_epoch(note.timestamp)
    sensitivity = checked_sensitivity(note.sensitivity)
    return as_vector(note.embedding, "note embedding"), sensitivity


def validate_update(note: Note) -> tuple[np.ndarray | None, str | None]:
    """The checks update_note makes first: the new embedding (None: keep the stored one) and sensitivity."""
    if note.id is None:
        raise StoreError("cannot update a note that was never stored", "add_note it first")
    if not note.content.strip():
        raise StoreError("a note needs non-empty content", "give some text")
    embedding = as_vector(note.embedding, "note embedding") if note.embedding is not None else None
    return embedding, checked_sensitivity(note.sensitivity)


def note_changes(old: Note, new: Note) -> tuple[dict[str, Any], dict[str, Any]]:
    """(before, after) of the tracked fields that differ; timestamps compare as instants."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for name in TRACKED_FIELDS:
        old_value, new_value = getattr(old, name), getattr(new, name)
        if name == "timestamp":
            if math.isclose(to_epoch(old_value), to_epoch(new_value)):
                continue
            old_value, new_value = old_value.isoformat(), new_value.isoformat()
        if old_value != new_value:
            before[name], after[name] = old_value, new_value
    return before, after


def new_embedding(embedding: np.ndarray | None, old: Note) -> np.ndarray | None:
    """The embedding an update writes: None when it keeps the stored one (none given, or the same vector)."""
    if embedding is not None and old.embedding is not None and np.array_equal(embedding, old.embedding):
        return None
    return embedding
