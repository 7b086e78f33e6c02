"""The relevance floor: retrieved notes none of which is about the question are not given to the LLM.

The gate decides whose notes may be used; this decides whether any of them is worth using. A small model
handed ten notes about something else answers from them anyway (a date from the wrong event, a name from
the wrong story) instead of saying it does not know. So when the best retrieved note's cosine similarity to
the question is below the floor, the retrieval is emptied and the assistant answers without personal
memory; the screen says that none of the person's memories matched. Two exceptions, as a family's short notes often
score just under the floor: the best note alone holds a telling word of the question (kiosk.retrieval.telling_words),
or the asker asks about medicines their own notes name, and those notes alone are kept (kiosk.retrieval.own_medicines).

The floor is read off the text encoder's own scale (kiosk.retrieval.thresholds):
the best-note similarity of questions asked against their owner's memories (related) and against another
person's memories (unrelated). It is the quantile of the related distribution that keeps `RELATED_KEPT` of
them; the share of unrelated ones it lets through is reported with it. Stored per encoder (sha256) as
calibration/relevance-<sha>.json; the floor in use (kiosk.retrieval.tuning) must equal it (a test checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kiosk.errors import CalibrationError
from kiosk.retrieval.own_medicines import own_medicine_notes
from kiosk.retrieval.results import Retrieval
from kiosk.retrieval.telling_words import best_note_alone_holds_a_telling_word
from kiosk.retrieval.thresholds import load_for_encoder

RELATED_KEPT = 0.95


class RelevanceCalibration(BaseModel):
    """The relevance floor for one text encoder, with the distributions it was read from."""

    model_config = ConfigDict(extra="forbid")

    encoder: str = Field(description="Text encoder name.")
    encoder_sha256: str = Field(min_length=64, max_length=64, description="sha256 identifying the encoder weights.")
    floor: float = Field(description="Best-note cosine similarity below which no note is used.")
    related_kept: float = Field(gt=0, le=1, description="Share of related questions the floor keeps (by design).")
    unrelated_kept: float = Field(ge=0, le=1, description="Share of unrelated questions the floor lets through.")
    samples: dict[str, int] = Field(description="How many questions of each distribution were used.")
    data: str = Field(description="What the similarities were computed on.")
    command: str = Field(description="The command that made this file.")
    created: str = Field(description="UTC time the file was written.")


def best_similarity(retrieval: Retrieval) -> float | None:
    """The highest cosine similarity among the retrieved notes (None without notes)."""
    return max((item.similarity for item in retrieval.notes), default=None)


def apply_floor(retrieval: Retrieval, floor: float, question: str = "", asker: int | None = None) -> Retrieval:
    """`retrieval` emptied (and marked) when its best note is below `floor`, unless its best note alone holds a
    telling word of `question` (kiosk.retrieval.telling_words), or only the `asker`'s own notes naming the medicines
    `question` asks about when there are any (kiosk.retrieval.own_medicines); unchanged otherwise."""
    if not retrieval.notes:
        return retrieval
    best = max(retrieval.notes, key=lambda item: item.similarity)
    if best.similarity >= floor:
        return retrieval
    others = [item.note.content for item in retrieval.notes if item is not best]
    if question and best_note_alone_holds_a_telling_word(question, best.note.content, others):
        return retrieval
    if question and (own := own_medicine_notes(question, [item.note for item in retrieval.notes], asker)):
        return replace(retrieval, notes=[retrieval.notes[index] for index in own])
    return replace(retrieval, notes=[], below_relevance_floor=True)


def derive_floor(
    related: Sequence[float], unrelated: Sequence[float], kept: float = RELATED_KEPT
) -> tuple[float, float]:
    """(floor, share of unrelated kept): the floor keeps `kept` of the related best-note similarities."""
    if not related or not unrelated:
        raise CalibrationError("the relevance floor needs related and unrelated similarities", "give both samples")
    if not 0 < kept <= 1:
        raise CalibrationError(f"kept={kept} is not a share", "use a value in (0, 1]")
    floor = float(np.quantile(np.asarray(related, dtype=np.float64), 1.0 - kept))
    floor = round(floor, 4)
    return floor, round(float(np.mean(np.asarray(unrelated, dtype=np.float64) >= floor)), 4)


def calibration_path(directory: Path, encoder_sha256: str) -> Path:
    return Path(directory) / f"relevance-{encoder_sha256[:16]}.json"


def load(path: Path, encoder_sha256: str) -> RelevanceCalibration:
    """The calibration at `path`, refused if it was made for another encoder."""
    return load_for_encoder(path, RelevanceCalibration, encoder_sha256, "relevance", "bench.bench_relevance")
