"""Forgetting without losing: memory strength, its decay, reinforcement by use, and archiving.

A note's strength is its retention since it was last used (or, never used, since it was said):

    s = 2 ** (-elapsed / h_n) = exp(-elapsed * ln 2 / h_n),    h_n = min(h_0 * g ** n, h_max)

with h_0 the configured half-life, n the number of times the note was retrieved and used, g >= 1 the
reinforcement growth (REINFORCEMENT_GROWTH) and h_max MAX_HALF_LIFE_DAYS. Each use restarts `elapsed` at 0
(s = 1) and multiplies the half-life by g: a stronger memory decays more slowly (MemoryBank's Ebbinghaus
curve R = exp(-t/S) with S growing on recall; we write it with a true half-life, so s is exactly 1/2 after
h_n, hence the ln 2). Nothing here deletes: notes below the floor are archived — out of retrieval, still
listed for their owner, restorable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from kiosk.config import ForgettingConfig
from kiosk.errors import DataError
from kiosk.memory.note import Note, to_epoch
from kiosk.memory.store import Store

SECONDS_PER_DAY = 86_400.0
REINFORCEMENT_GROWTH = 2.0
"""g: each retrieval that is used multiplies the note's half-life by this (a stronger memory decays slower)."""
MAX_HALF_LIFE_DAYS = 3650.0
"""h_max: the cap on a reinforced note's half-life."""
FADED_BELOW = 0.5
"""A note has faded once its strength is under one half: more than a half-life since it was said or last used."""


@dataclass(frozen=True)
class Decay:
    half_life_days: float
    growth: float = REINFORCEMENT_GROWTH
    max_half_life_days: float = MAX_HALF_LIFE_DAYS

    def __post_init__(self) -> None:
        for name, value in (("half-life", self.half_life_days), ("maximum half-life", self.max_half_life_days)):
            if not math.isfinite(value) or value <= 0:
                raise DataError(f"the {name} must be a positive number of days, not {value}", "use e.g. 180")
        if not math.isfinite(self.growth) or self.growth < 1:
            raise DataError(
                f"the reinforcement growth must be >= 1, not {self.growth}", "1 keeps the half-life; 2 doubles it"
            )

    @classmethod
    def from_config(cls, config: ForgettingConfig) -> Decay:
        return cls(config.half_life_days)

    def half_life_s(self, reinforcements: np.ndarray | int) -> np.ndarray:
        """h_n in seconds; computed in log space so a huge n cannot overflow before the cap."""
        n = np.asarray(reinforcements, dtype=np.float64)
        log_days = np.minimum(
            math.log(self.half_life_days) + n * math.log(self.growth), math.log(self.max_half_life_days)
        )
        return np.exp(log_days) * SECONDS_PER_DAY

    def strength(self, elapsed_s: np.ndarray | float, reinforcements: np.ndarray | int) -> np.ndarray:
        """2^(-elapsed/h_n) in (0, 1]; a note from the future (clock skew) counts as just used."""
        elapsed = np.maximum(np.asarray(elapsed_s, dtype=np.float64), 0.0)
        return np.asarray(np.exp2(-elapsed / self.half_life_s(reinforcements)))


def last_use(note: Note) -> datetime:
    return note.last_used_at or note.timestamp


def note_strengths(notes: Sequence[Note], now: datetime, decay: Decay) -> np.ndarray:
    if not notes:
        return np.zeros(0, dtype=np.float64)
    elapsed = np.array([to_epoch(now) - to_epoch(last_use(n)) for n in notes], dtype=np.float64)
    return decay.strength(elapsed, np.array([n.reinforcements for n in notes], dtype=np.int64))


def pool_strengths(store: Store, owner_ids: Sequence[int], now: datetime, decay: Decay) -> dict[int, float]:
    """Strength of every active note of these owners, by note id."""
    ids, used, counts = store.retention_state(owner_ids)
    values = decay.strength(to_epoch(now) - used, counts)
    return dict(zip(ids.tolist(), values.tolist(), strict=True))


def check_floor(floor: float) -> float:
    if not math.isfinite(floor) or not 0.0 <= floor < 1.0:
        raise DataError(f"the strength floor must be in [0, 1), not {floor}", "use e.g. 0.05; 0 never archives")
    return floor


def archive_faded(store: Store, owner_ids: Sequence[int], now: datetime, decay: Decay, floor: float) -> list[int]:
    """Archive the active notes of these owners whose strength is below `floor`; returns their ids."""
    if check_floor(floor) == 0.0 or not owner_ids:
        return []
    faded = [note_id for note_id, value in pool_strengths(store, owner_ids, now, decay).items() if value < floor]
    if faded:
        store.archive_notes(faded, now)
    return faded


@dataclass(frozen=True)
class FadedNote:
    """A faded note as the admin sees it: when it was said and used and how strong it is, never its text."""

    note_id: int
    owner_id: int
    scope: str
    said_at: datetime
    last_used_at: datetime
    reinforcements: int
    strength: float
    archived: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.note_id,
            "owner_id": self.owner_id,
            "scope": self.scope,
            "said_at": self.said_at.isoformat(),
            "last_used_at": self.last_used_at.isoformat(),
            "reinforcements": self.reinforcements,
            "strength": round(self.strength, 4),
            "archived": self.archived,
        }


def faded_notes(
    store: Store, owner_id: int, now: datetime, decay: Decay, below: float = FADED_BELOW
) -> list[FadedNote]:
    """The owner's notes whose strength is under `below`, archived ones included, weakest first."""
    notes = [note for note in store.list_notes(owner_id) if note.id is not None]
    strengths = note_strengths(notes, now, decay)
    faded = [
        FadedNote(
            int(note.id or 0),
            note.owner_id,
            note.scope,
            note.timestamp,
            last_use(note),
            note.reinforcements,
            float(value),
            note.archived,
        )
        for note, value in zip(notes, strengths.tolist(), strict=True)
        if value < below
    ]
    return sorted(faded, key=lambda item: (item.strength, item.note_id))


def faded_by_owner(store: Store, now: datetime, decay: Decay, below: float = FADED_BELOW) -> dict[str, list[FadedNote]]:
    """Every person's, group's and the public faded notes, by owner name (owners with none left out)."""
    owners = [(user.name, int(user.id)) for user in store.list_users()]
    owners += [(f"group:{group.name}", int(group.id)) for group in store.list_groups()]
    public = store.public_owner_id()
    owners += [("public", public)] if public is not None else []
    by_owner = {name: faded_notes(store, owner_id, now, decay, below) for name, owner_id in owners}
    return {name: notes for name, notes in by_owner.items() if notes}
