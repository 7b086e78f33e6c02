"""The paper's protocol: LoCoMo conversations as users of ONE store, each bound to a biometric identity.

Stages (each timed): data -> models -> store (cached by content hashes) -> enrollment -> LLM-free
retrieval for every condition -> answers (cached by model sha + prompt) -> scores -> results written
atomically. Conditions share one question list, so the probe is the only difference between Owner and
Non-owner; No memory, the ungated single-pool A-Mem retrieval and a gold-evidence context run in the
same pass with the same prompt and model.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kiosk.calibration.schema import Calibration
from kiosk.config import PROJECT_ROOT, KioskConfig
from kiosk.errors import CalibrationError, DataError, LLMError, ProbeError
from kiosk.eval import prompting
from kiosk.eval.analysis import gold_gap, gold_gap_markdown
from kiosk.eval.answer_cache import AnswerCache, CachedLLM
from kiosk.eval.assignments import (
    BENCHMARKS,
    IdentityBinding,
    Refusal,
    benchmark_dir,
    bind_identities,
    non_owner_of,
    read_identity_images,
)
from kiosk.eval.locomo import (
    Conversation,
    Question,
    conversations_digest,
    load_conversations,
    locomo_path,
    select_questions,
)
from kiosk.eval.metrics import (
    CATEGORY_NAMES,
    Scored,
    aggregate,
    average_gap,
    score_answer,
)
from kiosk.eval.report import STEP_SUMMARIES, write_results
from kiosk.identity.probe import Probe
from kiosk.llm.answer_steps import shown_reply
from kiosk.memory.note import Note
from kiosk.retrieval.retriever import chronological
from kiosk.security.backoff import no_backoff

Condition = Literal["owner", "non_owner", "no_memory", "ungated", "gold_evidence"]
# No memory before Non-owner: a rejected probe gets the no-memory prompt, answered once from the cache.
CONDITIONS: tuple[Condition, ...] = ("owner", "no_memory", "non_owner", "ungated", "gold_evidence")
PromptStyle = Literal["compact", "short", "assistant"]
STORE_FORMAT = "locomo-store-v1"

# A stage name and how far it got: (stage, done, total).
Progress = Callable[[str, int, int], None]


@dataclass
class EvalOptions:
    modality: Literal["face", "palm"]
    ratio: float = 0.1
    seed: int = 0
    construct: Literal["fast", "llm"] = "fast"
    gate_policy: Literal["threshold", "best-match"] = "best-match"
    conversations: int | None = None  # first N conversations of the file (default all 10)
    sessions: int | None = None  # keep only the first S sessions of each (small test slices)
    max_questions: int | None = None  # cap on the subset, taken round-robin over users (small slices)
    held_out_from: int | None = None  # draw outside this seed's sample (a development set for tuning)
    prompt: PromptStyle = "compact"
    answer_tokens: int = 32
    k: int = 10  # notes retrieved into each prompt; the paper's protocol is K = 10 (another K is a variant)
    # Simulate prefill while typing with llm.keep_prepared_notes (the kiosk's config decides the cap): retrieve
    # for the question without its last word first, and keep those notes first in the prompt at "send".
    keep_prepared: bool = False
    # Prefill before each owner / non-owner answer the prompt of the question without its last word, as the
    # kiosk does while the person types; with llm.cache_reuse_min_tokens the answer can depend on it.
    prefill_typed: bool = False
    answer: bool = True  # False: gate, leaks and evidence recall only (no LLM call)
    conditions: tuple[Condition, ...] = CONDITIONS
    identities: list[str] | None = None
    results_dir: Path = PROJECT_ROOT / "bench" / "results"
    cache_dir: Path = PROJECT_ROOT / "bench" / "cache"
    threshold: float | None = None  # overrides the calibrated tau (recorded as manual)
    operating_point: str | None = None  # a named operating point of the calibration instead of its chosen rule
    results_name: str | None = None  # default locomo_<modality>_<llm>
    command: str = ""
    write: bool = True


@dataclass
class LoadedLLM:
    llm: CachedLLM
    name: str  # slug used in file names
    sha256: str
    source: str


@dataclass
class StageClock:
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


def _noop(stage: str, done: int, total: int) -> None:
    return None


# ---- data ------------------------------------------------------------------------------------------


def truncate_sessions(conversation: Conversation, sessions: int | None) -> Conversation:
    if sessions is None:
        return conversation
    kept = conversation.sessions[:sessions]
    kept_sessions = {f"D{s.index}" for s in kept}
    questions = tuple(
        q for q in conversation.questions if q.evidence and all(e.split(":")[0] in kept_sessions for e in q.evidence)
    )
    return Conversation(conversation.sample_id, conversation.speaker_a, conversation.speaker_b, kept, questions)


def cap_round_robin(questions: Sequence[Question], limit: int | None) -> list[Question]:
    if limit is None or limit >= len(questions):
        return list(questions)
    by_user: dict[str, list[Question]] = {}
    for question in questions:
        by_user.setdefault(question.conversation_id, []).append(question)
    for user, queue in by_user.items():  # alternate categories inside each user's queue
        rank: dict[int, int] = {}
        keyed = []
        for question in queue:
            rank[question.category] = rank.get(question.category, 0) + 1
            keyed.append((rank[question.category], question))
        by_user[user] = [q for _, q in sorted(keyed, key=lambda item: item[0])]
    picked: list[Question] = []
    queues = list(by_user.values())
    while len(picked) < limit and any(queues):
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    order = {q.key: i for i, q in enumerate(questions)}
    return sorted(picked, key=lambda q: order[q.key])


def conversation_samples(source: Path, conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
    """The raw LoCoMo samples of the selected conversations, sessions cut like the parsed ones."""
    raw = json.loads(source.read_bytes())
    wanted = {c.sample_id: c for c in conversations}
    samples = []
    for sample in raw:
        conversation = wanted.get(sample.get("sample_id"))
        if conversation is None:
            continue
        kept = {f"session_{s.index}" for s in conversation.sessions}
        body = {
            key: value
            for key, value in sample["conversation"].items()
            if not key.startswith("session_") or key in kept or key.removesuffix("_date_time") in kept
        }
        samples.append({"sample_id": sample["sample_id"], "conversation": body, "qa": []})
    return samples


# ---- models ----------------------------------------------------------------------------------------


def cached_store_path(cache_dir: Path, key: str) -> Path:
    """Where the ingested store of `key` (store_key) is kept and reused between runs."""
    return cache_dir / "stores" / f"{key}.db"


def file_sha256(path: Path, cache_dir: Path) -> str:
    """sha256 of a (large) file, remembered by path, size and mtime."""
    stat = path.stat()
    memo = (
        cache_dir
        / "sha256"
        / hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    )
    if memo.is_file():
        return memo.read_text().strip()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(digest.hexdigest())
    return digest.hexdigest()


def load_llm(config: KioskConfig, cache: AnswerCache | None, cache_dir: Path) -> LoadedLLM:
    from kiosk.llm.factory import create_llm
    from kiosk.llm.requant import runtime_model
    from kiosk.models import ModelStore

    settings = config.llm
    if settings.backend == "openai":
        if not settings.endpoint_url:
            raise LLMError("no LLM endpoint URL given", "pass --llm-endpoint URL")
        inner = create_llm(config)
        slug = "endpoint-" + "".join(ch if ch.isalnum() or ch in "-._" else "-" for ch in settings.endpoint_model)
        identity = f"endpoint:{settings.endpoint_url}|{settings.endpoint_model}"
        sha = hashlib.sha256(identity.encode()).hexdigest()
        return LoadedLLM(CachedLLM(inner, sha, cache), slug, sha, identity)
    models = ModelStore(config.paths.models)
    if settings.gguf_path is not None:
        path = settings.gguf_path
        if not path.is_file():
            raise DataError(f"GGUF file {path} does not exist", "give the path of a .gguf model")
        sha = file_sha256(path, cache_dir)
        slug = path.stem
    else:
        path, sha = runtime_model(settings, models)
        slug = settings.model
    inner = create_llm(config, models)
    return LoadedLLM(CachedLLM(inner, sha, cache), slug, sha, str(path))


def load_embedder(config: KioskConfig, modality: str) -> Any:
    if modality == "face":
        from kiosk.identity.face import load_face_embedder

        return load_face_embedder(config)
    from kiosk.identity.palm import load_palm_embedder

    return load_palm_embedder(config)


def embed_benchmark_image(embedder: Any, modality: str, path: Path) -> np.ndarray:
    from kiosk.identity.face import read_image

    image = read_image(path)
    vector = embedder.embed_crop(image) if modality == "face" else embedder.embed_roi(image)
    return np.asarray(vector, dtype=np.float32)


def capture_refusal(embedder: Any, modality: str, image_root: Path) -> Refusal:
    """The terminal's capture gates as a test of one benchmark image: None if accepted, else the reason."""

    def refusal(relative: str) -> str | None:
        try:
            embed_benchmark_image(embedder, modality, image_root / relative)
        except ProbeError as exc:
            return exc.message
        return None

    return refusal


def text_model_sha(config: KioskConfig) -> str:
    from kiosk.models import ModelStore

    manifest = ModelStore(config.paths.models).manifest
    return hashlib.sha256(
        (manifest.get(config.text.model).sha256 + manifest.get(config.text.tokenizer).sha256).encode()
    ).hexdigest()


# ---- store -----------------------------------------------------------------------------------------


def calibrated_threshold(calibration: Calibration, operating_point: str | None) -> tuple[float, str]:
    """The calibration's chosen threshold, or one of its named operating points (e.g. `tau_d`, `eer`)."""
    if operating_point is None:
        return float(calibration.threshold), calibration.rule
    point = calibration.operating_points.get(operating_point)
    if point is None:
        known = ", ".join(sorted(calibration.operating_points))
        raise CalibrationError(
            f"the {calibration.modality} calibration has no operating point {operating_point!r}",
            f"use one of: {known}",
        )
    return float(point.threshold), operating_point


def store_key(config: KioskConfig, digest: str, construct: str, llm_sha: str | None, sessions: int | None) -> str:
    payload = {
        "format": STORE_FORMAT,
        "conversations": digest,
        "sessions": sessions,
        "construct": construct,
        "text_model": text_model_sha(config),
        "text_settings": config.text.model_dump(mode="json"),
        "memory_settings": config.memory.model_dump(mode="json"),
        "llm": llm_sha if construct == "llm" else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def build_store(
    path: Path,
    samples: list[dict[str, Any]],
    config: KioskConfig,
    text_encoder: Any,
    llm: Any,
    construct: str,
    progress: Progress,
) -> dict[str, Any]:
    """Ingest the conversations into a fresh store at `path` (renamed into place only when complete)."""
    from kiosk.memory.build import NoteBuilder
    from kiosk.memory.ingest import import_conversations
    from kiosk.memory.sqlite_store import SqliteStore

    path.parent.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix=".building-", dir=path.parent))
    try:
        source = work_dir / "conversations.json"
        source.write_text(json.dumps(samples), encoding="utf-8")
        partial = work_dir / "store.db"
        store = SqliteStore(partial)
        try:
            builder = NoteBuilder(store, text_encoder, config.memory, llm if construct == "llm" else None)
            report = import_conversations(
                source,
                builder,
                store,
                mode=construct,  # type: ignore[arg-type]
                progress=lambda done, total: progress("ingest", done, total),
            )
        finally:
            store.close()
        if report.failed:
            raise DataError(
                f"{report.failed} turns failed to import (first: {report.errors[0].as_dict()})",
                "fix the conversation file",
            )
        summary = {"added": report.added, "outcomes": dict(report.outcomes)}
        (work_dir / "store.json").write_text(json.dumps(summary), encoding="utf-8")
        for suffix in ("-wal", "-shm"):
            Path(str(partial) + suffix).unlink(missing_ok=True)
        shutil.move(str(work_dir / "store.json"), str(path.with_suffix(".json")))
        shutil.move(str(partial), str(path))
        return summary
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


# ---- the run ---------------------------------------------------------------------------------------


@dataclass
class UserSetup:
    conversation: Conversation
    user_id: int
    binding: IdentityBinding
    owner_probe: Probe


def _probe(vector: np.ndarray, modality: str, sha: str) -> Probe:
    return Probe(modality=modality, vector=vector, model_sha256=sha, captured_at=time.time())  # type: ignore[arg-type]


def typed_before_send(question: str) -> str:
    """The words a person has typed at their last pause before "send": all but the last word."""
    words = question.split()
    return " ".join(words[: max(1, len(words) - 1)])


def answer_request(
    question: str,
    notes: Sequence[Note],
    person: str | None,
    style: PromptStyle,
    in_order: bool = False,
    reply_words: int = 0,
) -> list[dict[str, str]]:
    """The answering prompt in `style`; the notes go oldest first unless `in_order` (kept as given);
    `reply_words` as llm.answer_reply_words (compact style only)."""
    ordered = list(notes) if in_order else sorted(notes, key=lambda n: (n.timestamp, n.id or 0))
    if style == "compact":
        from kiosk.llm.prompts import compact_answer_messages

        lines = [(n.timestamp, n.content, n.context) for n in ordered]
        return compact_answer_messages(question, lines, person, reply_words)
    if style == "assistant":
        from kiosk.llm.prompts import answer_messages

        return answer_messages(question, [(n.timestamp, n.content) for n in ordered], person)
    memories = [prompting.Memory(n.timestamp, prompting.note_line(n.content, n.context)) for n in ordered]
    return prompting.answer_messages(question, memories)


def _percentiles(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def run_locomo(config: KioskConfig, options: EvalOptions, progress: Progress = _noop) -> dict[str, Any]:
    """Run the whole protocol; returns the results dict (and writes JSON + markdown when options.write)."""
    from kiosk.calibration.active import active_calibration, calibration_path
    from kiosk.memory.sqlite_store import SqliteStore
    from kiosk.text import load_text_encoder

    clock = StageClock()
    config = config.model_copy(deep=True)
    config.retrieval.k = options.k
    config.gate.policy = options.gate_policy
    config.llm.max_answer_tokens = options.answer_tokens
    data_dir = config.paths.eval_data_dir

    with clock.stage("data"):
        source = locomo_path(data_dir)
        conversations = [
            truncate_sessions(c, options.sessions) for c in load_conversations(source, options.conversations)
        ]
        if len(conversations) < 2:
            raise DataError("the protocol needs at least two conversations (users)", "use --conversations 2 or more")
        questions = cap_round_robin(
            select_questions(conversations, options.ratio, options.seed, options.held_out_from), options.max_questions
        )
        if not questions:
            raise DataError("no question selected", "raise --ratio or use more sessions")
        images = read_identity_images(data_dir, options.modality)
        image_root = benchmark_dir(data_dir, options.modality)

    progress("data", 1, 1)
    cache = AnswerCache(options.cache_dir / "answers.sqlite")
    try:
        with clock.stage("models"):
            text_encoder = load_text_encoder(config)
            loaded = load_llm(config, cache, options.cache_dir)
            embedder = load_embedder(config, options.modality)
            bindings = bind_identities(
                [c.sample_id for c in conversations],
                images,
                options.seed,
                options.modality,
                options.identities,
                refusal=capture_refusal(embedder, options.modality, image_root),
            )
            if options.threshold is None:
                calibration = active_calibration(config, options.modality, embedder.model_sha256)
                threshold, rule = calibrated_threshold(calibration, options.operating_point)
                gate_source = {
                    "calibration": calibration_path(config, options.modality).name,
                    "rule": rule,
                    "encoder": f"{calibration.encoder.name} ({embedder.model_sha256[:12]}…)",
                }
            else:
                threshold = options.threshold
                gate_source = {
                    "calibration": "manual (--threshold)",
                    "rule": "manual",
                    "encoder": f"{getattr(embedder, 'name', options.modality)} ({embedder.model_sha256[:12]}…)",
                }

        progress("models", 1, 1)
        with clock.stage("store"):
            key = store_key(
                config, conversations_digest(conversations, source), options.construct, loaded.sha256, options.sessions
            )
            cached_store = cached_store_path(options.cache_dir, key)
            reused = cached_store.is_file()
            if not reused:
                with _exclusive(cached_store.with_suffix(".lock")):  # parallel runs build it once
                    reused = cached_store.is_file()
                    if not reused:
                        build_store(
                            cached_store,
                            conversation_samples(source, conversations),
                            config,
                            text_encoder,
                            loaded.llm,
                            options.construct,
                            progress,
                        )
            build_summary = json.loads(cached_store.with_suffix(".json").read_text(encoding="utf-8"))
            run_dir = Path(tempfile.mkdtemp(prefix="locomo-run-", dir=options.cache_dir))
            working = run_dir / "store.db"
            shutil.copyfile(cached_store, working)
        progress("store", 1, 1)
        store = SqliteStore(working)
        try:
            results = _evaluate(
                config,
                options,
                progress,
                clock,
                store,
                text_encoder,
                loaded,
                embedder,
                conversations,
                questions,
                bindings,
                image_root,
                threshold,
            )
        finally:
            store.close()
            shutil.rmtree(run_dir, ignore_errors=True)
        results["gate"].update({**gate_source, "benchmark": BENCHMARKS[options.modality][0]})
        results["store"] = {
            "key": key,
            "reused_from_cache": reused,
            "construct": options.construct,
            "build": build_summary,
        }
        results["answer_cache"] = {"hits": cache.hits, "misses": cache.misses}
        results["llm"]["cache_hits"] = cache.hits
    finally:
        cache.close()
    results["timings_s"] = {name: round(seconds, 2) for name, seconds in clock.seconds.items()}
    if options.write:
        name = options.results_name or f"locomo_{options.modality}_{loaded.name}"
        paths = write_results(results, options.results_dir / f"{name}.json")
        results["written"] = [str(p) for p in paths]
    return results


def _evaluate(
    config: KioskConfig,
    options: EvalOptions,
    progress: Progress,
    clock: StageClock,
    store: Any,
    text_encoder: Any,
    loaded: LoadedLLM,
    embedder: Any,
    conversations: Sequence[Conversation],
    questions: Sequence[Question],
    bindings: Sequence[IdentityBinding],
    image_root: Path,
    threshold: float,
) -> dict[str, Any]:
    from kiosk.assistant import Assistant

    modality = options.modality
    with clock.stage("enroll"):
        users: dict[str, UserSetup] = {}
        for done, (conversation, binding) in enumerate(zip(conversations, bindings, strict=True), start=1):
            user = store.user_by_name(conversation.sample_id)
            if user is None:
                raise DataError(f"user {conversation.sample_id} missing from the store", "delete bench/cache/stores")
            gallery = embed_benchmark_image(embedder, modality, image_root / binding.gallery_image)
            store.set_templates(user.id, modality, gallery[None, :], embedder.model_sha256)
            probe = _probe(
                embed_benchmark_image(embedder, modality, image_root / binding.probe_image),
                modality,
                embedder.model_sha256,
            )
            users[conversation.sample_id] = UserSetup(conversation, user.id, binding, probe)
            progress("enroll", done, len(conversations))
    order = [c.sample_id for c in conversations]
    # Non-owner probes fail verification by design: the terminal's back-off must not lock the next owner out.
    assistant = Assistant(
        store, text_encoder, loaded.llm, config, thresholds={modality: threshold}, backoff=no_backoff()
    )
    all_user_ids = [users[name].user_id for name in order]
    names = {users[name].user_id: name for name in order}

    # Gate outcomes per user (the probe, not the question, decides them).
    gate_rows = []
    for index, name in enumerate(order):
        setup = users[name]
        intruder = users[non_owner_of(bindings, index).user]
        owner_decision = assistant.verify(setup.owner_probe)
        intruder_decision = assistant.verify(intruder.owner_probe)
        gate_rows.append(
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
    false_match_users = {row["user"] for row in gate_rows if row["non_owner_false_match"]}

    # LLM-free retrieval for every condition: what each prompt will contain.
    contexts: dict[Condition, list[tuple[list[Note], str | None, bool]]] = {c: [] for c in options.conditions}
    typed_prompts: dict[Condition, list[TypedPrompt | None]] = {c: [] for c in options.conditions}
    leaks = {"notes": 0, "from_false_matches": 0, "questions": 0}
    recall: dict[Condition, list[float]] = {c: [] for c in options.conditions}
    per_question_meta: list[dict[str, Any]] = [{} for _ in questions]
    notes_by_ref: dict[int, dict[str | None, Note]] = {}
    with clock.stage("retrieve"):
        for qi, question in enumerate(questions):
            setup = users[question.conversation_id]
            index = order.index(question.conversation_id)
            intruder = users[non_owner_of(bindings, index).user]
            # Strength decays from each note's date to when the conversation's questions are asked, not to today.
            assistant.clock = _fixed_clock(setup.conversation.asked_at)
            for condition in options.conditions:
                notes: list[Note]
                person: str | None = None
                in_order = False
                typed_prompt: TypedPrompt | None = None
                meta: dict[str, Any] = {}
                if condition in ("owner", "non_owner"):
                    probe = setup.owner_probe if condition == "owner" else intruder.owner_probe
                    decision, retrieval, _ = assistant.retrieve(question.question, probe)
                    if options.prefill_typed:
                        typed_prompt = _typed_prompt(assistant, question.question, probe, names)
                    if options.keep_prepared:
                        prepared, kept = _kept_prepared(assistant, question.question, probe, decision, retrieval)
                        in_order = kept is not None
                        if kept is not None:
                            meta["prepared_extra_notes"] = len(kept) - len(retrieval.notes)
                            meta["prepared_prefix_notes"] = _shared_prefix(prepared, kept)
                            retrieval = replace(retrieval, notes=kept)
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
                        leaks["questions"] += 1
                        if question.conversation_id in false_match_users:
                            leaks["from_false_matches"] += leaked
                        leaks["notes"] += leaked
                        meta["leaked_notes"] = leaked
                elif condition == "no_memory":
                    notes = []
                elif condition == "ungated":
                    query = text_encoder.encode_one(question.question)
                    retrieval = assistant.relevant(
                        assistant.retriever.retrieve(
                            all_user_ids, query, question.question, k=config.retrieval.k, mode="familiarity"
                        )
                    )
                    notes = [item.note for item in retrieval.notes]
                    meta = {
                        "owners_in_context": sorted({names[n.owner_id] for n in notes}),
                        "below_relevance_floor": retrieval.below_relevance_floor,
                    }
                else:  # gold_evidence
                    if setup.user_id not in notes_by_ref:
                        notes_by_ref[setup.user_id] = {n.source_ref: n for n in store.list_notes(setup.user_id)}
                    notes = [
                        notes_by_ref[setup.user_id][e] for e in question.evidence if e in notes_by_ref[setup.user_id]
                    ]
                    person = question.conversation_id
                contexts[condition].append((notes, person, in_order))
                typed_prompts[condition].append(typed_prompt)
                if condition != "no_memory" and question.evidence:
                    found = {n.source_ref for n in notes if n.owner_id == setup.user_id}
                    recall[condition].append(sum(1 for e in question.evidence if e in found) / len(question.evidence))
                meta["refs"] = [f"{names[n.owner_id]}:{n.source_ref}" for n in notes]
                per_question_meta[qi][condition] = meta
            progress("retrieve", qi + 1, len(questions))

    # Answers: one LLM call per (condition, question) unless the identical prompt was answered before.
    # the answers after each step from the LLM's reply to the answer shown (kiosk.llm.answer_steps), scored: paired
    # comparisons of each step inside one run, at no extra LLM cost
    scored_steps: dict[Condition, dict[str, list[Scored]]] = {
        c: {step: [] for step in ANSWER_STEPS} for c in options.conditions
    }
    scored = {condition: steps["answer"] for condition, steps in scored_steps.items()}
    answers: list[dict[str, Any]] = [
        {
            "key": q.key,
            "category": CATEGORY_NAMES[q.category],
            "question": q.question,
            "answer": q.answer,
            "evidence": list(q.evidence),
        }
        for q in questions
    ]
    total = len(questions) * len(options.conditions)
    done = 0
    with clock.stage("answer"):
        for condition in options.conditions if options.answer else ():
            for qi, question in enumerate(questions):
                notes, person, in_order = contexts[condition][qi]
                typed_prompt = typed_prompts[condition][qi]
                if typed_prompt is not None:
                    loaded.llm.prefill(
                        answer_request(*typed_prompt, options.prompt, reply_words=config.llm.answer_reply_words)
                    )
                messages = answer_request(
                    question.question, notes, person, options.prompt, in_order, config.llm.answer_reply_words
                )
                raw = loaded.llm.chat(messages, max_tokens=options.answer_tokens, temperature=0.0)
                reply = prompting.clean_answer(raw)
                shown = shown_reply(
                    loaded.llm,
                    messages,
                    question.question,
                    reply,
                    notes_given=bool(notes),
                    settings=config.llm,
                    max_tokens=options.answer_tokens,
                    temperature=0.0,
                    clean=prompting.clean_answer,
                )
                first, prediction = shown.first, shown.text
                if shown.replaced is not None:
                    per_question_meta[qi][condition]["first_answer"] = first
                if shown.listed is not None:
                    per_question_meta[qi][condition]["unlisted_answer"] = shown.before_lists
                if typed_prompt is not None and not loaded.llm.last_cached:
                    per_question_meta[qi][condition]["reused_tokens"] = getattr(loaded.llm, "last_reused_tokens", None)
                steps = {"reply": reply, "shown": first, "unlisted": shown.before_lists, "answer": prediction}
                step_scores = {text: score_answer(text, question.answer, question.category) for text in steps.values()}
                for step, text in steps.items():
                    scored_steps[condition][step].append(step_scores[text])
                score = step_scores[prediction]
                answers[qi][condition] = {
                    "prediction": prediction,
                    **({"reply": reply} if reply != first else {}),
                    "f1": round(score.f1, 4),
                    "bleu1": round(score.bleu1, 4),
                    **per_question_meta[qi].get(condition, {}),
                }
                done += 1
                progress(f"answer:{condition}", done, total)

    with clock.stage("score"):
        condition_results: dict[str, Any] = {}
        for condition in options.conditions:
            scores = aggregate(scored[condition])
            values = recall[condition]
            if not options.answer:
                for qi in range(len(questions)):
                    answers[qi][condition] = per_question_meta[qi].get(condition, {})
            condition_results[condition] = {
                "scores": scores.as_dict() if options.answer else None,
                "evidence_recall_at_k": round(sum(values) / len(values), 4) if values else None,
                "below_relevance_floor": sum(
                    1 for meta in per_question_meta if meta.get(condition, {}).get("below_relevance_floor")
                ),
            }
            steps_on = {
                "before_concise": config.llm.concise_answers,
                "before_restated": config.llm.reask_restated
                or config.llm.unknown_restated_without_notes
                or config.llm.reask_speaker_names,
                "before_lists": config.llm.complete_lists,
            }
            for summary, before, after, marker in STEP_SUMMARIES:
                if options.answer and steps_on[summary]:
                    condition_results[condition][summary] = {
                        **_before_step(scored_steps[condition][before], scored_steps[condition][after]),
                        "changed": sum(1 for entry in answers if marker in entry.get(condition, {})),
                    }
        gap: dict[str, float | None] = {"f1": None, "bleu1": None}
        if options.answer and "owner" in scored and "non_owner" in scored:
            owner_scores, non_owner_scores = aggregate(scored["owner"]), aggregate(scored["non_owner"])
            gap = {k: round(v, 2) for k, v in average_gap(owner_scores, non_owner_scores).items()}

    p50, p95 = _percentiles(loaded.llm.generation_seconds)
    per_category_counts = {
        CATEGORY_NAMES[c]: sum(1 for q in questions if q.category == c) for c in sorted({q.category for q in questions})
    }
    results: dict[str, Any] = {
        "benchmark": "locomo",
        "modality": modality,
        "command": options.command,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {platform.processor() or ''} · {_cpu_count()} cores shared with other jobs",
        "ratio": options.ratio,
        "seed": options.seed,
        "questions_held_out_from_seed": options.held_out_from,
        "k": config.retrieval.k,
        "construct": options.construct,
        "prompt": options.prompt,
        "answer_tokens": options.answer_tokens,
        "keep_prepared_max_extra": config.llm.keep_prepared_max_extra if options.keep_prepared else None,
        "prefilled_typed_prompt": options.prefill_typed,
        "cache_reuse_min_tokens": config.llm.cache_reuse_min_tokens,
        "answer_reply_words": config.llm.answer_reply_words,
        "concise_answers": config.llm.concise_answers,
        "reask_restated": config.llm.reask_restated,
        "unknown_restated_without_notes": config.llm.unknown_restated_without_notes,
        "reask_speaker_names": config.llm.reask_speaker_names,
        "complete_lists": config.llm.complete_lists,
        "retrieval_mode": config.retrieval.mode,
        "dated_ranking": {"weight": config.retrieval.date_weight, "window_days": config.retrieval.date_window_days},
        "person_ranking": {"weight": config.retrieval.person_weight},
        "decay": {"weight": config.forgetting.weight, "half_life_days": config.forgetting.half_life_days},
        "relevance_floor": config.retrieval.relevance_floor,
        "counts": {
            "users": len(conversations),
            "notes": int(store.count_notes()),
            "questions": len(questions),
            "per_category": per_category_counts,
        },
        "llm": {
            "name": loaded.name,
            "sha256": loaded.sha256,
            "source": loaded.source,
            "generated": len(loaded.llm.generation_seconds),
            "p50_s": round(p50, 3),
            "p95_s": round(p95, 3),
            "llama_build": _llama_build(config) if options.answer else None,
        },
        "gate": {
            "policy": options.gate_policy,
            "threshold": threshold,
            "margin": config.gate.best_match_margin,
            "users": len(order),
            "owner_verified": sum(1 for row in gate_rows if row["owner_verified"]),
            "non_owner_false_matches": len(false_match_users),
            "per_user": gate_rows,
        },
        "leaks": leaks,
        "conditions": condition_results,
        "gap": gap,
        "assignments": [b.as_dict() for b in bindings],
        "answers": answers,
    }
    if options.answer and "owner" in options.conditions and "gold_evidence" in options.conditions:
        analysis = gold_gap(answers, {q.key: q.evidence for q in questions})
        results["gold_gap"] = analysis
        results["gold_gap_analysis"] = gold_gap_markdown(analysis)
    results["metrics"] = _flat(results)
    return results


TypedPrompt = tuple[str, list[Note], str | None]  # (words typed before send, their notes, person)


def _typed_prompt(assistant: Any, question: str, probe: Probe, names: dict[int, str]) -> TypedPrompt:
    """What the kiosk prefills while `question` is typed up to its last word: those words, the notes retrieved
    for them and the person the probe verified (kiosk.assistant.Assistant.prepare)."""
    typed = typed_before_send(question)
    decision, retrieval, _ = assistant.retrieve(typed, probe, record=False)
    person = names.get(decision.verified_user_id) if decision.verified_user_id is not None else None
    return typed, [item.note for item in retrieval.notes], person


def _kept_prepared(
    assistant: Any, question: str, probe: Probe, decision: Any, retrieval: Any
) -> tuple[list[Any], list[Any] | None]:
    """The notes prefilled while the question's words before the last were typed, and the final notes in the
    order the kiosk would then prompt them (kiosk.assistant.Assistant.in_prepared_order), or None."""
    typed_decision, typed, _ = assistant.retrieve(typed_before_send(question), probe, record=False)
    prepared = chronological(typed.notes)
    return prepared, assistant.in_prepared_order(typed_decision.verified_user_id, prepared, decision, retrieval)


def _shared_prefix(prepared: Sequence[Any], prompted: Sequence[Any]) -> int:
    """How many leading notes of the prompt were prefilled in that order (what the KV cache reuses)."""
    count = 0
    for before, after in zip(prepared, prompted, strict=False):
        if before.note.id != after.note.id:
            break
        count += 1
    return count


def _llama_build(config: KioskConfig) -> list[str] | None:
    """The instruction sets the llama.cpp build uses (its rounding decides some greedy answers), or None."""
    if config.llm.backend != "llamacpp":
        return None
    from kiosk.llm.cpu_support import built_for, verified_llama_build

    return built_for(verified_llama_build())


def _fixed_clock(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


ANSWER_STEPS = ("reply", "shown", "unlisted", "answer")


def _before_step(replies: Sequence[Scored], answers: Sequence[Scored]) -> dict[str, Any]:
    """The scores of the answers before a step (the restated question cut, a restating answer replaced, a list
    completed), and how many answers that step changed the F1 of."""
    before = aggregate(replies)
    return {
        "f1": round(before.average_f1, 2),
        "bleu1": round(before.average_bleu1, 2),
        "better": sum(1 for old, new in zip(replies, answers, strict=True) if new.f1 > old.f1),
        "worse": sum(1 for old, new in zip(replies, answers, strict=True) if new.f1 < old.f1),
    }


def _flat(results: dict[str, Any]) -> dict[str, float]:
    from kiosk.eval.report import flat_metrics

    return flat_metrics(results)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    import fcntl

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 1
