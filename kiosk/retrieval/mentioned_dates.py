"""The days a note names, for a question that names a day.

"What do I have on the 14th?" is answered by "Dentist on the 14th at 10", said on 20 November, not by what was
said on the 14th. So a note's named days are resolved as its prompt shows them (kiosk.llm.time_anchors, from the
note's local time), and a question's named days rank the notes that name one of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from datetime import date, datetime

import numpy as np

from kiosk.llm.time_anchors import anchor_local_times
from kiosk.local_time import MONTHS, Zone, local
from kiosk.memory.note import Note

_MONTH_NAMES = "january|february|march|april|may|june|july|august|september|october|november|december"
# "the Tuesday after 3 December 2026" anchors to a span, not a day: its date is the day it was said.
_DAY = re.compile(rf"(?<!before )(?<!after )\b([0-3]?\d) ({_MONTH_NAMES}) ((?:19|20)\d\d)\b", re.IGNORECASE)


def mentioned_days(content: str, said: datetime) -> frozenset[date]:
    """The concrete days `content` names (a relative day resolved from `said`, its local time, or a full date)."""
    days: set[date] = set()
    for day, month, year in _DAY.findall(anchor_local_times(content, said)):
        try:
            days.add(date(int(year), MONTHS[month.lower()], int(day)))
        except ValueError:
            continue
    return frozenset(days)


def note_days(notes: Sequence[Note], zone: Zone) -> dict[int, frozenset[date]]:
    """Note id -> the days it names, each note read in its local time in `zone`."""
    return {int(note.id or 0): mentioned_days(note.content, local(note.timestamp, zone)) for note in notes}


def naming_search(
    ids: np.ndarray,
    embeddings: np.ndarray,
    days_by_id: dict[int, frozenset[date]],
    days: Set[date],
    query: np.ndarray,
    n: int,
    excluded: Set[int] = frozenset(),
) -> list[tuple[int, float]]:
    """Top n (note id, cosine) among the rows (unit `embeddings`) whose note names one of `days`."""
    rows = [
        row
        for row, note_id in enumerate(ids.tolist())
        if note_id not in excluded and not days.isdisjoint(days_by_id.get(note_id, ()))
    ]
    if not rows or n < 1:
        return []
    sims = (embeddings[rows] @ np.asarray(query, dtype=np.float32)).astype(np.float64)
    order = sorted(range(len(rows)), key=lambda i: (-sims[i], int(ids[rows[i]])))[:n]
    return [(int(ids[rows[i]]), float(sims[i])) for i in order]


def merged(first: Sequence[tuple[int, float]], second: Sequence[tuple[int, float]], n: int) -> list[tuple[int, float]]:
    """Both rankings as one, best cosine first, each note once."""
    best: dict[int, float] = {}
    for note_id, score in [*first, *second]:
        best[note_id] = max(score, best.get(note_id, score))
    return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))[:n]
