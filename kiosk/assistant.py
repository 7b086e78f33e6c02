"""The assistant: gate the live probe, retrieve inside the matched pool, answer with the LLM.

Built by kiosk.app (the composition root) for the Qt app, `kiosk ask` and the evaluation. Each call re-checks
the probe it is given through the one gate (kiosk.identity.gate); nothing is remembered about who asked before.
The pool is the verified person's personal notes, their groups' notes and the public notes; an unrecognised
person gets the public notes only. Notes used in an answer are reinforced (kiosk/memory/forgetting.py); faded
notes of the pool are archived when a floor is configured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime
from functools import partial
from typing import Any, Protocol

import numpy as np

from kiosk.answer_result import AnswerResult
from kiosk.calibration.sensitive import sensitive_threshold
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, ProbeError
from kiosk.identity.gate import (
    BACKING_OFF,
    FAILED,
    NO_PROBE,
    GateDecision,
    GateRule,
    Identity,
    gate,
    refused,
    verified_identity,
)
from kiosk.identity.probe import Probe
from kiosk.llm.answer_steps import ANSWER_TEMPERATURE, answer_without_asking, shown_reply
from kiosk.llm.backend import LLM
from kiosk.llm.profiles import answer_profile
from kiosk.llm.prompts import COMPACT_NO_MEMORY_SYSTEM, COMPACT_SYSTEM, compact_answer_messages, shared_label
from kiosk.llm.time_anchors import terminal_line
from kiosk.local_time import TerminalClock, zone_named
from kiosk.memory.forgetting import Decay, archive_faded
from kiosk.memory.instructions import note_reads_as_instructions
from kiosk.memory.note import Note
from kiosk.memory.scopes import PERSONAL, Scope, owner_for
from kiosk.memory.store import SensitiveIndex, Store, owner_scope
from kiosk.retrieval.errand_updates import with_errand_updates
from kiosk.retrieval.familiarity import top_similar
from kiosk.retrieval.foreign_notes import is_foreign, without_foreign_instructions
from kiosk.retrieval.medicine_updates import with_medicine_updates
from kiosk.retrieval.pool import ScopedPool, scoped_pool, validate_query
from kiosk.retrieval.ranking import SCOPE_WEIGHTS
from kiosk.retrieval.relevance import apply_floor
from kiosk.retrieval.results import Retrieval
from kiosk.retrieval.retriever import Retriever, chronological
from kiosk.retrieval.sensitive import Clearance, by_face_and_palm, by_threshold
from kiosk.retrieval.step_up import step_up
from kiosk.security.audit import AuditLog
from kiosk.security.backoff import Backoff, verification_backoff

StreamCallback = Callable[[str], None]
ARCHIVE_SWEEP_INTERVAL_S = 3600.0
"""Least time between two archive sweeps of one pool while answering."""


class TextEncoderLike(Protocol):
    def encode(self, sentences: Sequence[str]) -> np.ndarray: ...
    def encode_one(self, sentence: str) -> np.ndarray: ...


class Assistant:
    """gate -> retrieve -> prompt -> LLM, for one shared store.

    `thresholds` maps a modality to tau; without it tau comes from the active calibration, which must
    have been made with the encoder that produced the probe. `llm` may be None for retrieval-only use.
    Failed verifications (no match, ambiguous, a suspected presentation attack) back off exponentially
    (`backoff`, security settings): while backing off, no probe is even compared, so guessing with photos
    gets slower and slower.
    """

    def __init__(
        self,
        store: Store,
        text_encoder: TextEncoderLike,
        llm: LLM | None,
        config: KioskConfig,
        thresholds: dict[str, float] | None = None,
        *,
        backoff: Backoff | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.store = store
        self.text_encoder = text_encoder
        self.llm = llm
        self.config = config
        self.thresholds = dict(thresholds) if thresholds is not None else None
        self.retriever = Retriever(store, config.retrieval, SCOPE_WEIGHTS, config.forgetting)
        self.decay = Decay.from_config(config.forgetting)
        self._last_sweep: dict[tuple[int, ...], datetime] = {}
        self.clock = TerminalClock(zone_named(config.ui.time_zone))
        self.backoff = backoff or verification_backoff(config.security)
        self.audit = audit

    # ---- identity ------------------------------------------------------------------------------
    def threshold(self, modality: str, model_sha256: str) -> float:
        if self.thresholds is not None:
            if modality not in self.thresholds:
                raise CalibrationError(f"no threshold given for {modality}", f"pass thresholds['{modality}']")
            return self.thresholds[modality]
        from kiosk.calibration.active import active_threshold

        return active_threshold(self.config, modality, model_sha256)

    def rule(self, probe: Probe) -> GateRule:
        """The configured gate rule at the probe's modality's tau."""
        settings = self.config.gate
        return GateRule(self.threshold(probe.modality, probe.model_sha256), settings.policy, settings.best_match_margin)

    def verify(self, probe: Probe | None, *, record: bool = True) -> GateDecision:
        """The gate decision for this probe under the configured rule (kiosk.identity.gate).

        `record=False` (preparing while someone types, checking who opens "my memories") leaves the back-off's
        failure count alone: only a question actually asked counts as a verification attempt."""
        if probe is None:
            decision = refused(NO_PROBE, self.config.gate.policy)
        elif self.backoff.wait_s() > 0:
            decision = refused(BACKING_OFF, self.config.gate.policy, modality=probe.modality)
        else:
            decision = gate(probe, self.store.templates(probe.modality), self.rule(probe))
        if not record:
            return decision
        self._audit_decision(decision)
        if probe is None or decision.reason == BACKING_OFF:
            return decision
        if decision.reason in FAILED:
            lock = self.backoff.failure()
            if lock > 0 and self.audit is not None:
                self.audit.record("verification-backoff", modality=probe.modality, lock_s=round(lock, 1))
        elif decision.matched_owner_ids:
            self.backoff.success()
        return decision

    def _audit_decision(self, decision: GateDecision) -> None:
        """Every verification a question makes: who, by which modality, how strongly, at which tau; never text."""
        if self.audit is None:
            return
        best = decision.best_score
        self.audit.record(
            "gate-decision",
            decision=decision.decision,
            reason=decision.reason,
            modality=decision.modality,
            user_id=decision.verified_user_id,
            matched_owners=len(decision.matched_owner_ids),
            best_user_id=decision.best_user_id,
            best_score=None if best is None else round(best, 4),
            threshold=decision.threshold,
            policy=decision.policy,
        )

    def identify(self, probe: Probe | None) -> Identity | None:
        """The single author a note may have: best-match with margin whatever the read policy, or None."""
        if probe is None or self.backoff.wait_s() > 0:
            return None
        return self.identity(gate(probe, self.store.templates(probe.modality), self.rule(probe).single_author()))

    def identity(self, decision: GateDecision) -> Identity | None:
        """The one person `decision` verifies, named from the store."""
        return verified_identity(decision, self.name_of)

    def name_of(self, user_id: int) -> str | None:
        user = self.store.get_user(user_id)
        return user.name if user else None

    def known_people(self, retrieval: Retrieval) -> list[str]:
        """The names of the people enrolled at this terminal, for the answer steps to judge an answer given without
        notes; none when `retrieval` holds notes, as the steps then do not read them (no store read per question)."""
        return [] if retrieval.notes else [user.name for user in self.store.list_users()]

    # ---- sensitive notes -----------------------------------------------------------------------
    def clearance(self, decision: GateDecision, probe: Probe | None, second_probe: Probe | None) -> Clearance:
        """Which matched owners' sensitive notes this query may use (see kiosk.retrieval.sensitive)."""
        settings = self.config.sensitive
        if settings.verification == "face+palm":
            second = self.verify(second_probe) if second_probe is not None else None
            return by_face_and_palm(decision, second)
        if probe is None or decision.threshold is None:
            return by_threshold(decision, float("inf"))
        strict = sensitive_threshold(self.config, probe.modality, probe.model_sha256, decision.threshold)
        return by_threshold(decision, strict)

    def _withheld_owners(self, pool: ScopedPool, clearance: Clearance) -> list[int]:
        """Pool owners whose sensitive notes stay out: a person not cleared, a group none of whose cleared
        members is here, the public scope unless someone is cleared."""
        cleared = set(clearance.cleared_owner_ids)
        cleared_groups = {group.id for person in cleared for group in self.store.groups_of(person)}
        open_to = {"personal": cleared, "group": cleared_groups}
        return [
            owner
            for owner, kind in pool.scopes.items()
            if (owner not in open_to[kind] if kind in open_to else not cleared)
        ]

    # ---- the pool --------------------------------------------------------------------------------
    def pool(self, decision: GateDecision) -> ScopedPool:
        """What this decision may read: matched people + their groups + the public notes."""
        return scoped_pool(
            decision, lambda user: [group.id for group in self.store.groups_of(user)], self.store.public_owner_id()
        )

    def _sweep(self, owners: tuple[int, ...], now: datetime) -> None:
        """Archive the pool's faded notes, at most once per ARCHIVE_SWEEP_INTERVAL_S per pool."""
        settings = self.config.forgetting
        if settings.archive_below <= 0:
            return
        last = self._last_sweep.get(owners)
        if last is not None and 0 <= (now - last).total_seconds() < ARCHIVE_SWEEP_INTERVAL_S:
            return
        archive_faded(self.store, owners, now, self.decay, settings.archive_below)
        self._last_sweep[owners] = now

    # ---- asking --------------------------------------------------------------------------------
    def retrieve(
        self,
        question: str,
        probe: Probe | None,
        *,
        k: int | None = None,
        record: bool = True,
        second_probe: Probe | None = None,
    ) -> tuple[GateDecision, Retrieval, dict[str, float]]:
        """Gate and retrieval only (no LLM): what `answer` would put into the prompt.

        `second_probe` (the other modality) only matters for sensitive notes under verification 'face+palm'.
        Sensitive notes of owners the query is not cleared for are left out before ranking.
        """
        text = validate_query(question)
        if second_probe is not None and probe is not None and second_probe.modality == probe.modality:
            raise ProbeError(
                f"both probes are {probe.modality}", "the second probe must be of the other modality (face + palm)"
            )
        timings: dict[str, float] = {}
        started = time.perf_counter()
        decision = self.verify(probe, record=record)
        pool = self.pool(decision)
        timings["gate"] = _ms_since(started)
        now = self.clock()
        asked_at = now if self.clock.resolves_yearless_days else None
        with owner_scope(self.store, pool.owner_ids):
            self._sweep(pool.owner_ids, now)
            if not any(self.store.count_notes(owner) for owner in pool.owner_ids):
                return decision, Retrieval(path=None, notes=[]), timings
            clearance = self.clearance(decision, probe, second_probe)
            withheld_owners = self._withheld_owners(pool, clearance)
            withheld: set[int] = set()
            if withheld_owners and isinstance(self.store, SensitiveIndex):
                withheld = self.store.sensitive_note_ids(withheld_owners)
            timings["gate"] = _ms_since(started)
            started = time.perf_counter()
            query = self.text_encoder.encode_one(text)
            timings["encode"] = _ms_since(started)
            search = partial(self.retriever.retrieve, pool.owner_ids, query, text, k=k, now=now)
            retrieval = search(scopes=pool.scopes, exclude=withheld, asked_at=asked_at)
            asker = decision.verified_user_id
            retrieval = without_foreign_instructions(self.relevant(retrieval, text, asker), asker)
            search_name = partial(self._search_name, pool.owner_ids, k=k, now=now, scopes=pool.scopes, exclude=withheld)
            find_named = lambda name: without_foreign_instructions(search_name(name), asker)  # noqa: E731
            retrieval = with_errand_updates(with_medicine_updates(retrieval, text, find_named), text, find_named)
            if withheld:
                # How many of the K most similar notes were held back: the screen can say "verify more to use them".
                nearest = top_similar(self.store, pool.owner_ids, query, k or self.config.retrieval.k)
                clearance = replace(clearance, withheld_in_top_k=sum(1 for item in nearest if item.note.id in withheld))
                if record:  # a question asked, not one being typed: would the asker's own withheld note be used?
                    scopes = pool.scopes
                    again = partial(search, scopes=scopes, asked_at=asked_at)
                    unheld = lambda: without_foreign_instructions(self.relevant(again(), text, asker), asker)  # noqa: E731
                    found = step_up(decision, clearance, withheld, scopes, self.store.groups_of, self.config, unheld)
                    retrieval = replace(retrieval, step_up=found)
        retrieval = replace(retrieval, clearance=clearance)
        timings["retrieve"] = retrieval.timings_ms.get("retrieve", 0.0)
        return decision, retrieval, timings

    def _search_name(self, owner_ids: Sequence[int], name: str, **search: Any) -> Retrieval:
        """The notes the gate lets through that are nearest to `name` (a medicine's name, an errand's item)."""
        return self.retriever.retrieve(owner_ids, self.text_encoder.encode_one(name), name, **search)

    def asked_on(self) -> date | None:
        """The terminal's local day, for the answer steps that judge days; None in a replay without a terminal clock
        (LoCoMo), where days named without a year also stay unresolved."""
        return self.clock().date() if self.clock.resolves_yearless_days else None

    def relevant(self, retrieval: Retrieval, question: str = "", asker: int | None = None) -> Retrieval:
        """`retrieval` without its notes when none is about `question` asked by `asker` (the retriever's tuned
        relevance floor)."""
        floor = self.retriever.tuning.relevance_floor
        return apply_floor(retrieval, floor, question, asker) if floor > 0 else retrieval

    def answer(
        self,
        question: str,
        probe: Probe | None,
        stream: StreamCallback | None = None,
        *,
        k: int | None = None,
        second_probe: Probe | None = None,
    ) -> AnswerResult:
        started_total = time.perf_counter()
        text = validate_query(question)
        decision, retrieval, timings = self.retrieve(text, probe, k=k, second_probe=second_probe)
        identity = self.identity(decision)
        reply = ""
        if self.config.sensitive.tap_to_reveal and any(item.note.sensitive for item in retrieval.notes):
            stream = None  # shown whole behind "tap to reveal" on the kiosk, never token by token
        settings = self.config.llm
        profile = answer_profile(settings.answer_profile)
        people = self.known_people(retrieval)
        known = answer_without_asking(text, notes_given=bool(retrieval.notes), profile=profile, people=people)
        if self.llm is not None and retrieval.step_up is not None and not retrieval.notes:
            reply = retrieval.step_up.message  # not "I don't know": the person's own private note needs more proof
        elif self.llm is not None and known is not None:
            reply = known  # the model is not asked: nothing it could say would be known
        elif self.llm is not None:
            started = time.perf_counter()
            messages = self.prompt(text, retrieval, identity)
            timings["prompt"] = _ms_since(started)
            started = time.perf_counter()
            generated = self._generate(messages, stream, timings, started_total)
            # the streamed words are replaced by this when it is shown
            reply = shown_reply(
                self.llm,
                messages,
                text,
                generated,
                notes_given=bool(retrieval.notes),
                profile=profile,
                max_tokens=settings.max_answer_tokens,
                temperature=ANSWER_TEMPERATURE,
                asked_on=self.asked_on(),
                people=people,
            ).text
            timings["llm"] = _ms_since(started)
            with owner_scope(self.store, sorted({item.note.owner_id for item in retrieval.notes})):
                self.store.reinforce(retrieval.note_ids, self.clock())
        timings["total"] = _ms_since(started_total)
        return AnswerResult(text, identity, decision, retrieval, reply, timings)

    def prompt(self, question: str, retrieval: Retrieval, identity: Identity | None) -> list[dict[str, str]]:
        """The answering prompt for these retrieved notes, oldest first: the asker's own notes (and those of the
        people the gate matched) first, then group and public notes other people wrote, each marked with its
        author. Another author's note that reads as instructions to the assistant is never in it."""
        asker = identity.user_id if identity else None
        ordered = [
            item.note
            for item in chronological(retrieval.notes)
            if not (is_foreign(item.note, asker) and note_reads_as_instructions(item.note))
        ]
        lines = [terminal_line(note, self.clock.zone) for note in ordered if not is_foreign(note, asker)]
        shared = [
            (terminal_line(note, self.clock.zone), shared_label(note.scope, self._author_name(note)))
            for note in ordered
            if is_foreign(note, asker)
        ]
        person = identity.name if identity else None
        return compact_answer_messages(question, lines, person, shared)

    def _author_name(self, note: Note) -> str | None:
        return self.name_of(note.author_id) if note.author_id is not None else None

    def system_prompts(self) -> list[str]:
        """The fixed system prompts of the answering prompt (warmed up at start-up)."""
        return [COMPACT_NO_MEMORY_SYSTEM, COMPACT_SYSTEM]

    def warm_up(self) -> None:
        """Load-time work no question should pay for: the encoder's first run, the system prompts' KV state."""
        self.text_encoder.encode_one("warm up")
        warm = getattr(self.llm, "warm_up", None)
        if warm is not None:
            warm(self.system_prompts())

    def prepare(self, partial_question: str, probe: Probe | None) -> int:
        """While the person is still typing: retrieve for the words so far and let the LLM process that
        prompt now; the final prompt reuses every leading token it shares (same notes, same person).

        Returns the prompt tokens processed ahead (0 when there is nothing to do, the LLM is busy or
        cannot prefill). Nothing is remembered about the person: the gate runs again on the real question,
        and a reused prefix is bit-for-bit what the final prompt would have computed.
        """
        prefill = getattr(self.llm, "prefill", None)
        if prefill is None or not self.config.llm.prefill_while_typing or not partial_question.strip():
            return 0
        decision, retrieval, _ = self.retrieve(partial_question, probe, record=False)
        identity = self.identity(decision)
        messages = self.prompt(partial_question.strip(), retrieval, identity)
        return int(prefill(messages))

    def _generate(
        self, messages: list[dict[str, str]], stream: StreamCallback | None, timings: dict[str, float], asked: float
    ) -> str:
        assert self.llm is not None
        settings = self.config.llm
        if stream is None:
            reply = self.llm.chat(messages, max_tokens=settings.max_answer_tokens, temperature=ANSWER_TEMPERATURE)
            return reply.strip()
        pieces: list[str] = []
        for piece in self.llm.stream(messages, max_tokens=settings.max_answer_tokens, temperature=ANSWER_TEMPERATURE):
            if not pieces:
                timings["first_token"] = _ms_since(asked)  # from the question, as the person waits for it
            pieces.append(piece)
            stream(piece)
        return "".join(pieces).strip()

    # ---- remembering ---------------------------------------------------------------------------
    def remember(
        self,
        text: str | bytes,
        probe: Probe | None,
        *,
        when: datetime | None = None,
        mode: str | None = None,
        scope: Scope = PERSONAL,
    ) -> int | None:
        """Store `text` said by the verified person, in `scope`; None (nothing stored) for anyone unverified.

        Verification for writing is always best-match with margin: a note must have exactly one author.
        A group note needs the author to be a member; a public note still needs a verified author.
        """
        from kiosk.memory.build import NoteBuilder
        from kiosk.memory.ingest import clean_content
        from kiosk.memory.ingest import remember as ingest_one

        clean_content(text)  # bad text is an error even for strangers
        identity = self.identify(probe)
        if identity is None or probe is None:
            return None
        user = self.store.get_user(identity.user_id)
        if user is None:
            return None
        owner_id = owner_for(self.store, scope, user.id)
        construction = mode or self.config.memory.construction
        if self.llm is None:
            construction = "fast"
        builder = NoteBuilder(self.store, self.text_encoder, self.config.memory, self.llm)
        with owner_scope(self.store, sorted({user.id, owner_id})):
            report = ingest_one(
                builder,
                user,
                text,
                modality=probe.modality,
                mode=construction,  # type: ignore[arg-type]
                when=when or self.clock(),
                owner_id=owner_id,
            )
        return report.note.id


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
