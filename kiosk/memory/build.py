"""Note construction as in A-Mem: attributes, embedding, links and evolution, always inside one owner.

LLM mode asks the model for keywords / context / tags (P_s1), then shows it the nearest notes of the
same owner and lets it pick links and, optionally, strengthen the new note's tags and update the
neighbours' context and tags (recorded in their history). A reply that fails validation is retried
once; after that the note is stored without the LLM's attributes and the failure is logged.

Fast mode makes no LLM call: keywords KeyBERT-style from the text encoder, context from speaker and
date, links to same-owner notes above a similarity threshold.

Either mode marks sensitive notes by rules (kiosk.memory.sensitivity) when `memory.classify_sensitive` is on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field, field_validator

from kiosk.config import MemoryConfig
from kiosk.errors import KioskError, LLMError, StoreUnavailable
from kiosk.llm import prompts
from kiosk.llm.backend import LLM
from kiosk.llm.structured import ask_structured
from kiosk.memory.keywords import candidates, select_keywords
from kiosk.memory.note import Link, Note
from kiosk.memory.sensitivity import classify_rules
from kiosk.memory.store import Store

log = logging.getLogger(__name__)

Mode = Literal["fast", "llm"]
Outcome = Literal["fast", "none", "parsed", "retried", "failed"]

LLM_NEIGHBOURS_MAX = 3
"""Neighbours shown to the LLM for linking: a small model's prompt and reply stay short."""
EVOLVE_MAX_TOKENS = 320
"""Covers the longest reply evolve_schema allows for three neighbours (measured: a 200-token budget cut replies)."""
PHRASE_CACHE_SIZE = 50_000


@dataclass(frozen=True)
class ConstructionTuning:
    """How notes are built and linked: tuning constants, not settings (a benchmark may pass other values)."""

    link_candidates: int = 5
    """Nearest same-owner notes considered for links."""
    evolve: bool = True
    """New notes may update their neighbours' tags and context (A-Mem)."""
    link_similarity: float = 0.55
    """Fast mode: link to same-owner notes at least this cosine-similar."""
    keywords: int = 5
    """Fast mode: keywords picked per note (KeyBERT-style)."""
    reply_context_words: int = 30
    """Fast mode, imported conversations: the context of a turn quotes up to this many words of the turn it
    replies to, so a bare reply ('5 years already!') is found by the question it answers (0 = off)."""
    construction_max_tokens: int = 192
    """LLM mode: token budget of each structured construction reply."""


CONSTRUCTION = ConstructionTuning()


def construction_settings(config: MemoryConfig, tuning: ConstructionTuning = CONSTRUCTION) -> dict[str, Any]:
    """Everything that decides how notes are built, as JSON values: the identity of a store cached with them."""
    from kiosk.memory.ingest import MAX_CONTENT_CHARS

    # `sensitivity_llm`, the removed LLM classifier's switch (always off), keeps stores cached before its
    # removal under the key they were built with.
    return {
        **config.model_dump(mode="json"),
        **asdict(tuning),
        "max_content_chars": MAX_CONTENT_CHARS,
        "sensitivity_llm": False,
    }


class TextEncoding(Protocol):
    def encode(self, sentences: Sequence[str]) -> np.ndarray: ...


def _clean_list(values: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        text = " ".join(value.split()).strip(" ,.;:#")
        if text:
            seen.setdefault(text.lower(), text)
    return list(seen.values())


class NoteAttributes(BaseModel):
    keywords: list[str] = Field(min_length=1, max_length=8)
    context: str = Field(min_length=1, max_length=400)
    tags: list[str] = Field(min_length=1, max_length=6)

    @field_validator("keywords", "tags")
    @classmethod
    def _non_blank_items(cls, values: list[str]) -> list[str]:
        cleaned = _clean_list(values)
        if not cleaned:
            raise ValueError("needs at least one non-blank item")
        return cleaned

    @field_validator("context")
    @classmethod
    def _non_blank_context(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("context is blank")
        return " ".join(value.split())


class NeighbourUpdate(BaseModel):
    number: int
    context: str = Field(max_length=400)
    tags: list[str] = Field(max_length=6)


class EvolutionDecision(BaseModel):
    links: list[int] = Field(max_length=LLM_NEIGHBOURS_MAX)
    strengthen: bool
    tags: list[str] = Field(max_length=6)
    update_neighbors: bool
    neighbors: list[NeighbourUpdate] = Field(max_length=LLM_NEIGHBOURS_MAX)


@dataclass
class Draft:
    """What a note is made from: an utterance by (or about) its owner."""

    owner_id: int
    content: str
    timestamp: datetime
    modality: str = "face"
    speaker: str | None = None
    source: str = "chat"
    source_ref: str | None = None
    author_id: int | None = None
    """The person who said it when the owner is a group or the public scope."""
    replying_to: str | None = None
    """The turn this one answers ("Caroline: How long have you been married?"), for imported conversations."""


@dataclass
class BuildReport:
    note: Note
    mode: Mode
    attributes: Outcome
    evolution: Outcome
    linked: list[int] = field(default_factory=list)
    evolved_neighbours: list[int] = field(default_factory=list)
    llm_seconds: float = 0.0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    sensitivity_source: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "note": self.note.as_dict(),
            "sensitivity_source": self.sensitivity_source,
            "mode": self.mode,
            "attributes": self.attributes,
            "evolution": self.evolution,
            "linked": self.linked,
            "evolved_neighbours": self.evolved_neighbours,
            "llm_seconds": round(self.llm_seconds, 3),
            "completion_tokens": self.completion_tokens,
            "errors": self.errors,
        }


def human_date(moment: datetime) -> str:
    """'8 May 2023, 1:56 pm' — the way LoCoMo writes session dates, without platform strftime flags."""
    hour = moment.hour % 12 or 12
    half = "am" if moment.hour < 12 else "pm"
    return f"{moment.day} {moment:%B %Y}, {hour}:{moment.minute:02d} {half}"


def basic_context(draft: Draft, reply_words: int = 0) -> str:
    who = draft.speaker or "The user"
    said = f"{who} said this on {human_date(draft.timestamp)}"
    if reply_words and draft.replying_to:
        words = draft.replying_to.split()
        quoted = " ".join(words[:reply_words]) + (" …" if len(words) > reply_words else "")
        return f"{said}, replying to {quoted}"
    return f"{said}."


class NoteBuilder:
    """Builds and stores notes for one store; `llm` is only needed for LLM mode."""

    def __init__(
        self,
        store: Store,
        encoder: TextEncoding,
        config: MemoryConfig,
        llm: LLM | None = None,
        tuning: ConstructionTuning = CONSTRUCTION,
    ) -> None:
        self.store = store
        self.encoder = encoder
        self.config = config
        self.llm = llm
        self.tuning = tuning
        self._phrase_vectors: dict[str, np.ndarray] = {}

    def build(self, draft: Draft, mode: Mode | None = None) -> BuildReport:
        mode = mode or self.config.construction
        if mode == "llm":
            return self._build_llm(draft)
        return self._build_fast(draft)

    def build_many(self, drafts: Sequence[Draft], mode: Mode | None = None) -> list[BuildReport | KioskError]:
        """Build and store several notes in order; fast mode encodes them in batches (bulk import).

        Each note is still its own transaction; a failure is returned in its place and the rest go on.
        """
        mode = mode or self.config.construction
        results: list[BuildReport | KioskError] = []
        if mode == "llm":
            for draft in drafts:
                try:
                    results.append(self._build_llm(draft))
                except KioskError as exc:
                    results.append(exc)
            return results
        for note in self._prepare_fast(drafts):
            try:
                results.append(self._store_fast(note))
            except KioskError as exc:
                results.append(exc)
        return results

    # ---- fast ----------------------------------------------------------------------------------
    def _build_fast(self, draft: Draft) -> BuildReport:
        return self._store_fast(self._prepare_fast([draft])[0])

    def _prepare_fast(self, drafts: Sequence[Draft]) -> list[Note]:
        """Keywords, context and embedding for each draft, with two batched encoder passes for all.

        Candidate phrases repeat a lot within a conversation (names, places), so their vectors are cached.
        """
        phrases = [candidates(d.content) for d in drafts]
        missing = list(dict.fromkeys(p for group in phrases for p in group if p not in self._phrase_vectors))
        vectors = self.encoder.encode([d.content for d in drafts] + missing)
        if len(self._phrase_vectors) + len(missing) > PHRASE_CACHE_SIZE:
            self._phrase_vectors.clear()
        self._phrase_vectors.update(zip(missing, vectors[len(drafts) :], strict=True))
        notes: list[Note] = []
        for index, draft in enumerate(drafts):
            group = phrases[index]
            note = self._draft_note(draft)
            group_vectors = np.stack([self._phrase_vectors[p] for p in group]) if group else np.zeros((0, 1))
            note.keywords = select_keywords(group, group_vectors, vectors[index], self.tuning.keywords)
            note.context = basic_context(draft, self.tuning.reply_context_words)
            if self.config.classify_sensitive:
                note.sensitivity = classify_rules(draft.content)
            notes.append(note)
        embeddings = self.encoder.encode([n.embedding_text() for n in notes])
        for note, embedding in zip(notes, embeddings, strict=True):
            note.embedding = np.asarray(embedding, dtype=np.float32)
        return notes

    def _store_fast(self, note: Note) -> BuildReport:
        neighbours = self._neighbours(note, self.tuning.link_candidates)
        note.links = [Link(nid, "similar") for nid, sim in neighbours if sim >= self.tuning.link_similarity]
        stored = self.store.add_note(note)
        return BuildReport(
            stored,
            "fast",
            "fast",
            "fast",
            linked=[link.target_id for link in note.links],
            sensitivity_source="rules" if stored.sensitive else None,
        )

    # ---- llm -----------------------------------------------------------------------------------
    def _build_llm(self, draft: Draft) -> BuildReport:
        if self.llm is None:
            raise LLMError("LLM construction was asked for but no LLM is loaded", "use --construct fast or load one")
        started = time.perf_counter()
        note = self._draft_note(draft)
        attributes = ask_structured(
            self.llm,
            prompts.note_messages(draft.content, draft.speaker or "the user", human_date(draft.timestamp)),
            NoteAttributes,
            prompts.NOTE_SCHEMA,
            max_tokens=self.tuning.construction_max_tokens,
            what=f"note attributes ({draft.source_ref or draft.content[:40]!r})",
        )
        errors = list(attributes.errors)
        tokens = attributes.completion_tokens
        if attributes.value is not None:
            note.keywords = attributes.value.keywords
            note.tags = attributes.value.tags
            note.context = f"{attributes.value.context} ({basic_context(draft).rstrip('.')})"
        else:
            note.context = basic_context(draft, self.tuning.reply_context_words)
        note.embedding = self._embed(note)
        if self.config.classify_sensitive:
            note.sensitivity = classify_rules(draft.content)

        evolution: Outcome = "none"
        updates: list[tuple[Note, NeighbourUpdate]] = []
        count = min(self.tuning.link_candidates, LLM_NEIGHBOURS_MAX)
        neighbours = self.store.get_notes([nid for nid, _ in self._neighbours(note, count)])
        if neighbours:
            decision = ask_structured(
                self.llm,
                prompts.evolve_messages(
                    note.content,
                    note.context,
                    note.tags,
                    [prompts.format_neighbour(i + 1, n.content, n.context, n.tags) for i, n in enumerate(neighbours)],
                ),
                EvolutionDecision,
                prompts.evolve_schema(len(neighbours)),
                max_tokens=EVOLVE_MAX_TOKENS,
                what=f"note evolution ({draft.source_ref or draft.content[:40]!r})",
            )
            evolution = decision.outcome
            errors += decision.errors
            tokens += decision.completion_tokens
            if decision.value is not None:
                updates = self._apply_decision(note, neighbours, decision.value)
        stored = self.store.add_note(note)
        stored_id = stored.id  # None: queued by an offline fleet terminal, and offline there are no neighbours
        evolved = [self._evolve_neighbour(neighbour, update, stored_id) for neighbour, update in updates if stored_id]
        return BuildReport(
            stored,
            "llm",
            attributes.outcome,
            evolution,
            linked=[link.target_id for link in note.links],
            evolved_neighbours=[nid for nid in evolved if nid is not None],
            llm_seconds=time.perf_counter() - started,
            completion_tokens=tokens,
            errors=errors,
            sensitivity_source="rules" if note.sensitivity else None,
        )

    def _apply_decision(
        self, note: Note, neighbours: list[Note], decision: EvolutionDecision
    ) -> list[tuple[Note, NeighbourUpdate]]:
        by_number = {i + 1: n for i, n in enumerate(neighbours)}
        # Small models often name neighbours to update but leave "links" empty; a neighbour the model itself
        # judged worth updating is related, and A-Mem evolves only within a note's linked neighbourhood.
        updated = [u.number for u in decision.neighbors] if decision.update_neighbors else []
        linked = [by_number[k] for k in dict.fromkeys([*decision.links, *updated]) if k in by_number]
        note.links = [Link(n.id, "related") for n in linked if n.id is not None and n.owner_id == note.owner_id]
        if not self.tuning.evolve:
            return []
        if decision.strengthen:
            tags = _clean_list(decision.tags)
            if tags and tags != note.tags:
                note.tags = tags
                note.embedding = self._embed(note)
        if not decision.update_neighbors:
            return []
        return [
            (by_number[u.number], u)
            for u in decision.neighbors
            if u.number in by_number and by_number[u.number].owner_id == note.owner_id
        ]

    def _evolve_neighbour(self, neighbour: Note, update: NeighbourUpdate, new_note_id: int) -> int | None:
        context = " ".join(update.context.split())
        tags = _clean_list(update.tags)
        changed = False
        if context and context != neighbour.context:
            neighbour.context = context
            changed = True
        if tags and tags != neighbour.tags:
            neighbour.tags = tags
            changed = True
        if not changed:
            return None
        neighbour.embedding = self._embed(neighbour)
        self.store.update_note(neighbour, reason=f"evolution: update_neighbor after note {new_note_id}")
        return neighbour.id

    # ---- shared --------------------------------------------------------------------------------
    @staticmethod
    def _draft_note(draft: Draft) -> Note:
        return Note(
            id=None,
            owner_id=draft.owner_id,
            modality=draft.modality,
            content=draft.content,
            timestamp=draft.timestamp,
            source=draft.source,
            source_ref=draft.source_ref,
            author_id=draft.author_id,
        )

    def _embed(self, note: Note) -> np.ndarray:
        return np.asarray(self.encoder.encode([note.embedding_text()])[0], dtype=np.float32)

    def _neighbours(self, note: Note, count: int) -> list[tuple[int, float]]:
        if count <= 0 or note.embedding is None:
            return []
        try:
            return self.store.knn([note.owner_id], note.embedding, count)
        except StoreUnavailable as exc:  # an offline fleet terminal: the note is queued without links
            log.warning("no link candidates for the new note: %s", exc.message)
            return []
