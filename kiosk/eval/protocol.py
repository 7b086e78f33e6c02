"""The paper's protocol: LoCoMo conversations as users of ONE store, each bound to a biometric identity.

Stages (each timed): data -> models -> store (cached by content hashes) -> enrollment -> LLM-free
retrieval for every condition -> answers (cached by model sha + prompt) -> scores -> results written
atomically. Conditions share one question list, so the probe is the only difference between Owner and
Non-owner; No memory, the ungated single-pool A-Mem retrieval and a gold-evidence context run in the
same pass with the same prompt and model.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from kiosk.config import PROJECT_ROOT, KioskConfig
from kiosk.errors import DataError
from kiosk.eval.analysis import gold_gap, gold_gap_markdown
from kiosk.eval.answer_cache import AnswerCache
from kiosk.eval.answering import answer_all, question_rows, step_summaries
from kiosk.eval.assignments import BENCHMARKS, IdentityBinding, benchmark_dir, bind_identities, read_identity_images
from kiosk.eval.conditions import CONDITIONS, Condition, Contexts, enroll, gate_outcomes, retrieve_contexts
from kiosk.eval.locomo import (
    Conversation,
    Question,
    cap_round_robin,
    conversation_samples,
    conversations_digest,
    load_conversations,
    locomo_path,
    select_questions,
    truncate_sessions,
)
from kiosk.eval.metrics import CATEGORY_NAMES, Scored, aggregate, average_gap
from kiosk.eval.models import LoadedLLM, calibrated_threshold, capture_refusal, llama_build, load_embedder, load_llm
from kiosk.eval.report import flat_metrics, write_results
from kiosk.eval.stages import Progress, StageClock, no_progress
from kiosk.eval.store import build_store, cached_store_path, exclusive, store_key
from kiosk.llm.profiles import AnswerProfile, profile_without
from kiosk.memory.build import CONSTRUCTION, ConstructionTuning
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning
from kiosk.security.backoff import no_backoff

__all__ = ["CONDITIONS", "EvalOptions", "run_locomo"]


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
    answer_tokens: int = 32
    k: int = 10  # notes retrieved into each prompt; the paper's protocol is K = 10 (another K is a variant)
    answer: bool = True  # False: gate, leaks and evidence recall only (no LLM call)
    conditions: tuple[Condition, ...] = CONDITIONS
    identities: list[str] | None = None
    results_dir: Path = PROJECT_ROOT / "bench" / "results"
    cache_dir: Path = PROJECT_ROOT / "bench" / "cache"
    threshold: float | None = None  # overrides the calibrated tau (recorded as manual)
    operating_point: str | None = None  # a named operating point of the calibration instead of its chosen rule
    results_name: str | None = None  # default locomo_<modality>_<llm>
    profile: str | None = None  # answer profile; None: the configured llm.answer_profile
    steps_off: tuple[str, ...] = ()  # steps of the profile left out (a paired "step off" run)
    command: str = ""
    write: bool = True
    tuning: RetrievalTuning = DEFAULT_TUNING  # a benchmark's retrieval variant (bench/)
    construction: ConstructionTuning = CONSTRUCTION  # a benchmark's note-construction variant (bench/)


@dataclass
class _Run:
    """What the stages before the evaluation made."""

    conversations: list[Conversation]
    questions: list[Question]
    bindings: list[IdentityBinding]
    image_root: Path
    threshold: float


def chosen_profile(config: KioskConfig, options: EvalOptions) -> AnswerProfile:
    """The answer profile of this run: `options.profile` (else the configured one) without `options.steps_off`."""
    return profile_without(options.profile or config.llm.answer_profile, options.steps_off)


def run_locomo(config: KioskConfig, options: EvalOptions, progress: Progress = no_progress) -> dict[str, Any]:
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
    chosen_profile(config, options)  # a profile or step that does not exist is refused before any work

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
                config,
                conversations_digest(conversations, source),
                options.construct,
                loaded.sha256,
                options.sessions,
                options.construction,
            )
            cached_store = cached_store_path(options.cache_dir, key)
            reused = cached_store.is_file()
            if not reused:
                with exclusive(cached_store.with_suffix(".lock")):  # parallel runs build it once
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
                            options.construction,
                        )
            build_summary = json.loads(cached_store.with_suffix(".json").read_text(encoding="utf-8"))
            run_dir = Path(tempfile.mkdtemp(prefix="locomo-run-", dir=options.cache_dir))
            working = run_dir / "store.db"
            shutil.copyfile(cached_store, working)
        progress("store", 1, 1)
        store = SqliteStore(working)
        run = _Run(conversations, questions, bindings, image_root, threshold)
        try:
            results = _evaluate(config, options, progress, clock, store, text_encoder, loaded, embedder, run)
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
    run: _Run,
) -> dict[str, Any]:
    from kiosk.app.build import build_assistant

    modality = options.modality
    with clock.stage("enroll"):
        users = enroll(store, embedder, modality, run.image_root, run.conversations, run.bindings, progress)
    order = [c.sample_id for c in run.conversations]
    # Non-owner probes fail verification by design: the terminal's back-off must not lock the next owner out.
    assistant = build_assistant(
        config, store, text_encoder, loaded.llm, thresholds={modality: run.threshold}, backoff=no_backoff()
    )
    if options.tuning != assistant.retriever.tuning:
        assistant.retriever = assistant.retriever.retuned(options.tuning)
    names = {users[name].user_id: name for name in order}
    gate_rows = gate_outcomes(assistant, users, order, run.bindings, names)
    false_match_users = {row["user"] for row in gate_rows if row["non_owner_false_match"]}

    # LLM-free retrieval for every condition: what each prompt will contain.
    with clock.stage("retrieve"):
        contexts = retrieve_contexts(
            assistant,
            store,
            text_encoder,
            options.conditions,
            run.questions,
            users,
            run.bindings,
            false_match_users,
            config.retrieval.k,
            progress,
        )

    # Answers: one LLM call per (condition, question) unless the identical prompt was answered before; the answer
    # after each step of the answer profile is scored, a paired comparison of each step at no extra LLM cost.
    profile = chosen_profile(config, options)
    rows = question_rows(run.questions)
    scored_steps: dict[Condition, dict[str, list[Scored]]] = {}
    with clock.stage("answer"):
        if options.answer:
            scored_steps = answer_all(
                loaded.llm,
                profile,
                options.answer_tokens,
                options.conditions,
                run.questions,
                contexts,
                rows,
                progress,
            )

    with clock.stage("score"):
        condition_results: dict[str, Any] = {}
        for condition in options.conditions:
            if not options.answer:
                for qi in range(len(run.questions)):
                    rows[qi][condition] = contexts.meta[qi].get(condition, {})
            values = contexts.recall[condition]
            condition_results[condition] = {
                "scores": aggregate(scored_steps[condition]["answer"]).as_dict() if options.answer else None,
                "evidence_recall_at_k": round(sum(values) / len(values), 4) if values else None,
                "below_relevance_floor": sum(
                    1 for meta in contexts.meta if meta.get(condition, {}).get("below_relevance_floor")
                ),
            }
            if options.answer:
                condition_results[condition] |= step_summaries(profile, scored_steps[condition], rows, condition)
        gap: dict[str, float | None] = {"f1": None, "bleu1": None}
        if options.answer and "owner" in scored_steps and "non_owner" in scored_steps:
            owner_scores = aggregate(scored_steps["owner"]["answer"])
            non_owner_scores = aggregate(scored_steps["non_owner"]["answer"])
            gap = {k: round(v, 2) for k, v in average_gap(owner_scores, non_owner_scores).items()}

    results = _results(config, options, store, loaded, run, contexts, gate_rows, condition_results, gap, rows)
    if options.answer and "owner" in options.conditions and "gold_evidence" in options.conditions:
        analysis = gold_gap(rows, {q.key: q.evidence for q in run.questions})
        results["gold_gap"] = analysis
        results["gold_gap_analysis"] = gold_gap_markdown(analysis)
    results["metrics"] = flat_metrics(results)
    return results


def _results(
    config: KioskConfig,
    options: EvalOptions,
    store: Any,
    loaded: LoadedLLM,
    run: _Run,
    contexts: Contexts,
    gate_rows: list[dict[str, Any]],
    condition_results: dict[str, Any],
    gap: dict[str, float | None],
    rows: list[dict[str, Any]],
) -> dict[str, Any]:
    """The run's results: settings, counts, the LLM, the gate, leaks, each condition's scores and every answer."""
    p50, p95 = _percentiles(loaded.llm.generation_seconds)
    questions = run.questions
    per_category_counts = {
        CATEGORY_NAMES[c]: sum(1 for q in questions if q.category == c) for c in sorted({q.category for q in questions})
    }
    tuning = options.tuning
    return {
        "benchmark": "locomo",
        "modality": options.modality,
        "command": options.command,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {platform.processor() or ''} · {os.cpu_count() or 1} cores shared with "
        "other jobs",
        "ratio": options.ratio,
        "seed": options.seed,
        "questions_held_out_from_seed": options.held_out_from,
        "k": config.retrieval.k,
        "construct": options.construct,
        "answer_tokens": options.answer_tokens,
        "answer_profile": chosen_profile(config, options).name,
        "dated_ranking": {"weight": tuning.date_weight, "window_days": tuning.date_window_days},
        "person_ranking": {"weight": tuning.person_weight},
        "decay": {"weight": config.forgetting.weight, "half_life_days": config.forgetting.half_life_days},
        "relevance_floor": tuning.relevance_floor,
        "counts": {
            "users": len(run.conversations),
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
            "llama_build": llama_build(config) if options.answer else None,
        },
        "gate": {
            "policy": options.gate_policy,
            "threshold": run.threshold,
            "margin": config.gate.best_match_margin,
            "users": len(run.conversations),
            "owner_verified": sum(1 for row in gate_rows if row["owner_verified"]),
            "non_owner_false_matches": sum(1 for row in gate_rows if row["non_owner_false_match"]),
            "per_user": gate_rows,
        },
        "leaks": contexts.leaks,
        "conditions": condition_results,
        "gap": gap,
        "assignments": [b.as_dict() for b in run.bindings],
        "answers": rows,
    }


def _percentiles(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95
