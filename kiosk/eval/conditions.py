"""The protocol's conditions, LLM-free: each user enrolled with their benchmark identity, each probe through the gate,
and for every question what each condition's prompt will hold.

Owner and Non-owner differ only in the probe (the user's own, or the next user's); No memory has no notes; Ungated is
A-Mem's single-pool retrieval over every user's notes; Gold evidence is the question's evidence turns themselves.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kiosk.eval.assignments import IdentityBinding, non_owner_of
from kiosk.eval.locomo import Conversation, Question
from kiosk.eval.models import embed_benchmark_image
from kiosk.eval.stages import Progress
from kiosk.identity.probe import Probe
from kiosk.local_time import TerminalClock

if TYPE_CHECKING:
    from kiosk.memory.note import Note

Condition = Literal["owner", "non_owner", "no_memory", "ungated", "gold_evidence"]
# No memory before Non-owner: a rejected probe gets the no-memory prompt, answered once from the cache.
CONDITIONS: tuple[Condition, ...] = ("owner", "no_memory", "non_owner", "ungated", "gold_evidence")


@dataclass
class UserSetup:
    conversation: Conversation
    user_id: int
    binding: IdentityBinding
    owner_probe: Probe


@dataclass
class Contexts:
    """What each condition's prompt holds for every question, and what that says before any answer."""

    prompts: dict[Condition, list[tuple[list[Note], str | None]]]
    """Per condition, per question: the notes (any order) and the person the prompt names."""
    recall: dict[Condition, list[float]]
    """Per condition: each question's share of its evidence turns among the notes (questions with evidence)."""
    meta: list[dict[str, Any]]
    """Per question, per condition: what the answers record besides the answer (matched users, path, refs...)."""
    leaks: dict[str, int] = field(default_factory=lambda: {"notes": 0, "from_false_matches": 0, "questions": 0})


def benchmark_probe(vector: np.ndarray, modality: str, sha: str, variants: np.ndarray | None = None) -> Probe:
    """A probe of a benchmark image's embedding (and its re-aligned variants), made by the encoder of sha256 `sha`."""
    return Probe(
        modality=modality,  # type: ignore[arg-type]
        vector=vector,
        model_sha256=sha,
        captured_at=time.time(),
        variants=variants,
    )


def benchmark_image_probe(embedder: Any, modality: str, path: Path) -> Probe:
    """The probe a terminal makes of a benchmark image: a palm ROI carries its re-alignments when the embedder's
    `palm.alignment_search` is on, as the scanner's probes do."""
    if modality != "palm":
        return benchmark_probe(embed_benchmark_image(embedder, modality, path), modality, embedder.model_sha256)
    from kiosk.identity.face import read_image

    vectors = embedder.probe_vectors(read_image(path), roi=True)
    return benchmark_probe(vectors.vector, modality, embedder.model_sha256, vectors.variants)


def enroll(
    store: Any,
    embedder: Any,
    modality: str,
    image_root: Path,
    conversations: Sequence[Conversation],
    bindings: Sequence[IdentityBinding],
    progress: Progress,
) -> dict[str, UserSetup]:
    """Each conversation's user enrolled with its identity's gallery image; its probe image embedded."""
    from kiosk.errors import DataError

    users: dict[str, UserSetup] = {}
    for done, (conversation, binding) in enumerate(zip(conversations, bindings, strict=True), start=1):
        user = store.user_by_name(conversation.sample_id)
        if user is None:
            raise DataError(f"user {conversation.sample_id} missing from the store", "delete bench/cache/stores")
        gallery = embed_benchmark_image(embedder, modality, image_root / binding.gallery_image)
        store.set_templates(user.id, modality, gallery[None, :], embedder.model_sha256)
        probe = benchmark_image_probe(embedder, modality, image_root / binding.probe_image)
        users[conversation.sample_id] = UserSetup(conversation, user.id, binding, probe)
        progress("enroll", done, len(conversations))
    return users


def gate_outcomes(
    assistant: Any,
    users: dict[str, UserSetup],
    order: Sequence[str],
    bindings: Sequence[IdentityBinding],
    names: dict[int, str],
) -> list[dict[str, Any]]:
    """Per user, what the gate made of their own probe and of the Non-owner's (the probe, not the question, decides)."""
    rows = []
    for index, name in enumerate(order):
        setup = users[name]
        intruder = users[non_owner_of(bindings, index).user]
        owner_decision = assistant.verify(setup.owner_probe)
        intruder_decision = assistant.verify(intruder.owner_probe)
        rows.append(
            {
                "user": name,
                "owner_probe_score": round(owner_decision.scores.get(setup.user_id, float("nan")), 4),
                "owner_matched": [names[i] for i in owner_decision.matched_owner_ids],
                "owner_verified": setup.user_id in owner_decision.matched_owner_ids,
                "non_owner_probe_from": intruder.conversation.sample_id,
                "non_owner_probe_score": round(intruder_decision.scores.get(setup.user_id, float("nan")), 4),
                "non_owner_matched": [names[i] for i in intruder_decision.matched_owner_ids],
                "non_owner_false_match": setup.user_id in intruder_decision.matched_owner_ids,
            }
        )
    return rows


def retrieve_contexts(
    assistant: Any,
    store: Any,
    text_encoder: Any,
    conditions: Sequence[Condition],
    questions: Sequence[Question],
    users: dict[str, UserSetup],
    bindings: Sequence[IdentityBinding],
    false_match_users: set[str],
    k: int,
    progress: Progress,
) -> Contexts:
    """Every condition's notes for every question, retrieved as the kiosk retrieves them (no LLM); `k`: the
    Ungated condition's notes per prompt."""
    order = list(users)
    names = {setup.user_id: name for name, setup in users.items()}
    all_user_ids = [users[name].user_id for name in order]
    contexts = Contexts({c: [] for c in conditions}, {c: [] for c in conditions}, [{} for _ in questions])
    notes_by_ref: dict[int, dict[str | None, Note]] = {}
    for qi, question in enumerate(questions):
        setup = users[question.conversation_id]
        intruder = users[non_owner_of(bindings, order.index(question.conversation_id)).user]
        # Strength decays from each note's date to when the conversation's questions are asked, not to today.
        assistant.clock = TerminalClock(UTC, fixed=setup.conversation.asked_at, resolves_yearless_days=False)
        for condition in conditions:
            notes: list[Note]
            person: str | None = None
            meta: dict[str, Any] = {}
            if condition in ("owner", "non_owner"):
                probe = setup.owner_probe if condition == "owner" else intruder.owner_probe
                decision, retrieval, _ = assistant.retrieve(question.question, probe)
                notes = [item.note for item in retrieval.notes]
                if decision.verified_user_id is not None:
                    person = names.get(decision.verified_user_id)
                meta |= {
                    "matched": [names[i] for i in decision.matched_owner_ids],
                    "path": retrieval.path,
                    "below_relevance_floor": retrieval.below_relevance_floor,
                }
                if condition == "non_owner":
                    leaked = sum(1 for n in notes if n.owner_id == setup.user_id)
                    contexts.leaks["questions"] += 1
                    if question.conversation_id in false_match_users:
                        contexts.leaks["from_false_matches"] += leaked
                    contexts.leaks["notes"] += leaked
                    meta["leaked_notes"] = leaked
            elif condition == "no_memory":
                notes = []
            elif condition == "ungated":
                query = text_encoder.encode_one(question.question)
                retrieval = assistant.relevant(
                    assistant.retriever.retrieve(all_user_ids, query, question.question, k=k), question.question
                )
                notes = [item.note for item in retrieval.notes]
                meta = {
                    "owners_in_context": sorted({names[n.owner_id] for n in notes}),
                    "below_relevance_floor": retrieval.below_relevance_floor,
                }
            else:  # gold_evidence
                if setup.user_id not in notes_by_ref:
                    notes_by_ref[setup.user_id] = {n.source_ref: n for n in store.list_notes(setup.user_id)}
                notes = [notes_by_ref[setup.user_id][e] for e in question.evidence if e in notes_by_ref[setup.user_id]]
                person = question.conversation_id
            contexts.prompts[condition].append((notes, person))
            if condition != "no_memory" and question.evidence:
                found = {n.source_ref for n in notes if n.owner_id == setup.user_id}
                contexts.recall[condition].append(
                    sum(1 for e in question.evidence if e in found) / len(question.evidence)
                )
            meta["refs"] = [f"{names[n.owner_id]}:{n.source_ref}" for n in notes]
            contexts.meta[qi][condition] = meta
        progress("retrieve", qi + 1, len(questions))
    return contexts
