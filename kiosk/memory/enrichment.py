"""Notes enriched after the fact: a note is stored at once by fast construction, and an idle terminal later asks
the LLM for its keywords, specific tags and a context sentence, then for its links and its neighbours' tags.

Nothing is recorded about the queue: a note whose tags are empty is pending (fast construction never sets tags,
enrichment always does), so a crash or a restart just leaves it pending. Enrichment only ever rewrites keywords,
tags, context and the embedding of a note read fresh just before the write; content, owner, scope, time,
sensitivity and sealing stay as they are (the store keeps a person's sensitivity mark, and re-seals with the
owner's key). A note deleted or forgotten meanwhile is skipped. Links and neighbour updates stay inside the note's
owner, which is also its scope (groups and the public scope are owners of their own).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, Field

from kiosk.errors import KioskError, StoreError
from kiosk.llm.backend import LLM, Message
from kiosk.llm.prompts import NOTE_SCHEMA
from kiosk.llm.structured import ask_structured
from kiosk.memory.build import LLM_NEIGHBOURS_MAX, NoteAttributes, TextEncoding, human_date
from kiosk.memory.note import Note
from kiosk.memory.store import Store

log = logging.getLogger(__name__)

Outcome = Literal["enriched", "linked", "skipped", "failed", "yielded"]

# The construction prompt's "broad categories (for example family, work, hobby ...)" gave the same four tags to
# almost every note; this one asks for the note's own topics and copies no example a small model would echo.
ENRICH_SYSTEM = "You file one message as a memory note. Reply with JSON only."
ENRICH_TEMPLATE = """Message from {speaker} on {date}:
{content}

Return JSON with:
- "keywords": 3 to 5 words or short phrases taken from the message: names, places, things, times
- "context": one sentence saying what the message tells about {speaker} and when it would be useful to recall it
- "tags": 2 to 4 short topic labels naming what this message is specifically about (the named things, people,
  events or tasks in it); never a vague category that would fit most messages"""

ENRICH_SCHEMA = NOTE_SCHEMA
"""The reply has the shape construction asks for: the same fields, items and limits."""

LINK_SYSTEM = "You maintain a person's memory notes. Reply with JSON only."
LINK_TEMPLATE = """A memory note was just filed. Below are the most similar earlier notes of the same owner.

Note: {content} (tags: {tags})

Earlier notes:
{neighbours}

Return JSON with:
- "links": numbers of the earlier notes about the same person, thing, event or task as the note (may be empty)
- "neighbors": for each linked earlier note whose tags should change in the light of the note, its "number" and
  its new "tags" (2 to 4 specific topic labels)"""


def link_schema(neighbour_count: int) -> dict[str, Any]:
    """Bounded so that the longest allowed reply fits `EnrichmentBudget.link_tokens`."""
    numbers = list(range(1, neighbour_count + 1))
    tags = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 24}, "maxItems": 4}
    return {
        "type": "object",
        "properties": {
            "links": {"type": "array", "items": {"type": "integer", "enum": numbers}, "maxItems": neighbour_count},
            "neighbors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"number": {"type": "integer", "enum": numbers}, "tags": tags},
                    "required": ["number", "tags"],
                },
                "maxItems": neighbour_count,
            },
        },
        "required": ["links", "neighbors"],
    }


class NeighbourTags(BaseModel):
    number: int
    tags: list[str] = Field(max_length=4)


class LinkDecision(BaseModel):
    links: list[int] = Field(max_length=LLM_NEIGHBOURS_MAX)
    neighbors: list[NeighbourTags] = Field(max_length=LLM_NEIGHBOURS_MAX)


@dataclass(frozen=True)
class EnrichmentBudget:
    """What one note may cost: tuning constants, not settings (a benchmark may pass others)."""

    attribute_tokens: int = 128
    """Token budget of the keywords / context / tags reply (the longest the schema allows fits)."""
    link_tokens: int = 160
    """Token budget of the links / neighbour tags reply for three neighbours."""
    seconds_per_note: float = 60.0
    """The links step is skipped once a note's attributes took this long (a slow or loaded terminal)."""
    neighbours: int = LLM_NEIGHBOURS_MAX
    """Nearest same-owner notes shown to the LLM for links."""


BUDGET = EnrichmentBudget()


def is_pending(note: Note) -> bool:
    """A note built fast (or whose LLM construction failed) and not archived: it has no tags yet."""
    return not note.tags and not note.archived


def clean_items(values: Sequence[str], limit: int) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        text = " ".join(value.split()).strip(" ,.;:#")
        if text:
            seen.setdefault(text.lower(), text)
    return list(seen.values())[:limit]


def enrich_messages(note: Note, speaker: str) -> list[Message]:
    content = ENRICH_TEMPLATE.format(speaker=speaker, date=human_date(note.timestamp), content=note.content)
    return [{"role": "system", "content": ENRICH_SYSTEM}, {"role": "user", "content": content}]


def link_messages(note: Note, neighbours: Sequence[Note]) -> list[Message]:
    listed = "\n".join(f"{i + 1}. {n.content} (tags: {', '.join(n.tags) or '-'})" for i, n in enumerate(neighbours))
    content = LINK_TEMPLATE.format(content=note.content, tags=", ".join(note.tags), neighbours=listed)
    return [{"role": "system", "content": LINK_SYSTEM}, {"role": "user", "content": content}]


@dataclass
class EnrichReport:
    note_id: int
    outcome: Outcome
    seconds: float = 0.0
    completion_tokens: int = 0
    tags: list[str] = field(default_factory=list)
    linked: list[int] = field(default_factory=list)
    retagged_neighbours: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Enricher:
    """Enriches one stored note at a time with the LLM, inside its owner."""

    def __init__(
        self,
        store: Store,
        encoder: TextEncoding,
        llm: LLM,
        budget: EnrichmentBudget = BUDGET,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.encoder = encoder
        self.llm = llm
        self.budget = budget
        self.clock = clock

    def enrich(self, note_id: int, should_yield: Callable[[], bool] = lambda: False) -> EnrichReport:
        """Keywords, tags and context for the note, then (budget and terminal allowing) its links and its
        neighbours' tags. `should_yield` is asked between the two LLM steps: a question comes first."""
        started = self.clock()
        note = self.store.get_note(note_id)
        if note is None or not is_pending(note):
            return EnrichReport(note_id, "skipped")
        speaker = self._speaker(note)
        reply = ask_structured(
            self.llm,
            enrich_messages(note, speaker),
            NoteAttributes,
            ENRICH_SCHEMA,
            max_tokens=self.budget.attribute_tokens,
            what=f"enrichment of note {note_id}",
        )
        report = EnrichReport(note_id, "failed", errors=list(reply.errors), completion_tokens=reply.completion_tokens)
        if reply.value is None:
            report.seconds = self.clock() - started
            return report
        enriched = self._write_attributes(note_id, reply.value)
        report.seconds = self.clock() - started
        if enriched is None:
            report.outcome = "skipped"
            return report
        report.outcome, report.tags = "enriched", list(enriched.tags)
        if report.seconds >= self.budget.seconds_per_note or should_yield():
            return report
        self._link(enriched, report)
        report.seconds = self.clock() - started
        return report

    # ---- steps ---------------------------------------------------------------------------------
    def _speaker(self, note: Note) -> str:
        author = self.store.get_user(note.speaker_id)
        return author.name if author is not None else "the user"

    def _write_attributes(self, note_id: int, value: NoteAttributes) -> Note | None:
        fresh = self.store.get_note(note_id)  # read again: the person may have forgotten it while the LLM ran
        if fresh is None or not is_pending(fresh):
            return None
        keywords = clean_items([*value.keywords, *fresh.keywords], 8)
        context = f"{fresh.context} {value.context}".strip()
        return self._rewrite(replace(fresh, keywords=keywords, tags=clean_items(value.tags, 4), context=context))

    def _link(self, note: Note, report: EnrichReport) -> None:
        assert note.id is not None and note.embedding is not None
        nearest = self.store.knn([note.owner_id], note.embedding, self.budget.neighbours + 1)
        neighbours = [
            n
            for n in self.store.get_notes([nid for nid, _ in nearest if nid != note.id])
            if n.owner_id == note.owner_id
        ][: self.budget.neighbours]
        if not neighbours:
            report.outcome = "linked"
            return
        reply = ask_structured(
            self.llm,
            link_messages(note, neighbours),
            LinkDecision,
            link_schema(len(neighbours)),
            max_tokens=self.budget.link_tokens,
            what=f"links of note {note.id}",
        )
        report.errors += reply.errors
        report.completion_tokens += reply.completion_tokens
        if reply.value is None:
            return
        by_number = {i + 1: n for i, n in enumerate(neighbours)}
        retag = {u.number: u.tags for u in reply.value.neighbors if u.number in by_number}
        for number in dict.fromkeys([*reply.value.links, *retag]):
            target = by_number.get(number)
            if target is None or target.id is None:
                continue
            try:
                self.store.add_link(note.id, target.id, "related")
            except StoreError as exc:  # either note deleted while the LLM ran
                log.info("no link %s-%s: %s", note.id, target.id, exc.one_line())
                continue
            report.linked.append(target.id)
            tags = clean_items(retag.get(number, []), 4)
            if tags and self._retag(target.id, tags, note.id):
                report.retagged_neighbours.append(target.id)
        report.outcome = "linked"

    def _retag(self, neighbour_id: int, tags: list[str], by: int) -> bool:
        """A neighbour's tags in the light of the new note; a pending neighbour is left for its own enrichment."""
        fresh = self.store.get_note(neighbour_id)
        if fresh is None or is_pending(fresh) or tags == fresh.tags:
            return False
        return self._rewrite(replace(fresh, tags=tags), reason=f"enrichment: tags after note {by}") is not None

    def _rewrite(self, note: Note, reason: str = "enrichment") -> Note | None:
        note.embedding = self.encoder.encode([note.embedding_text()])[0].astype("float32")
        try:
            stored = self.store.update_note(note, reason=reason)
        except StoreError as exc:  # deleted between the read and the write
            log.info("note %s not enriched: %s", note.id, exc.one_line())
            return None
        if stored.embedding is None:  # a store may not read vectors back with the note
            stored.embedding = note.embedding
        return stored


class EnrichmentQueue:
    """The notes waiting for enrichment, found from the notes themselves (see the module docstring).

    `run` works through them until `should_yield` says a person needs the terminal; a note whose enrichment
    failed is not retried until the queue is made again (the next start)."""

    def __init__(self, enricher: Enricher, rescan_s: float = 60.0) -> None:
        self.enricher = enricher
        self.store = enricher.store
        self.rescan_s = rescan_s
        self._queue: deque[int] = deque()
        self._given_up: set[int] = set()
        self._scanned_at: float | None = None

    def add(self, note_id: int) -> None:
        """A note just remembered: enriched before older pending ones are found by the next scan."""
        if note_id not in self._queue and note_id not in self._given_up:
            self._queue.append(note_id)

    def pending(self) -> list[int]:
        """Every pending note of every owner (people, groups, the public scope), oldest first per owner."""
        owners = [u.id for u in self.store.list_users()] + [g.id for g in self.store.list_groups()]
        public = self.store.public_owner_id()
        if public is not None:
            owners.append(public)
        return [
            int(n.id)
            for owner in dict.fromkeys(owners)
            for n in self.store.list_notes(owner)
            if n.id is not None and is_pending(n) and n.id not in self._given_up
        ]

    def _refill(self) -> None:
        now = self.enricher.clock()
        if self._scanned_at is not None and now - self._scanned_at < self.rescan_s:
            return
        self._scanned_at = now
        for note_id in self.pending():
            self.add(note_id)

    def run(self, should_yield: Callable[[], bool], max_notes: int | None = None) -> list[EnrichReport]:
        """Enrich pending notes one by one, asking `should_yield` before each; returns what was done."""
        reports: list[EnrichReport] = []
        if not self._queue:
            self._refill()
        while self._queue and (max_notes is None or len(reports) < max_notes):
            if should_yield():
                break
            note_id = self._queue.popleft()
            try:
                report = self.enricher.enrich(note_id, should_yield)
            except KioskError as exc:  # the LLM or the store failed: this note waits for the next start
                report = EnrichReport(note_id, "failed", errors=[exc.one_line()])
            if report.outcome == "failed":
                self._given_up.add(note_id)
            reports.append(report)
        return reports
