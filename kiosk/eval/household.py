"""`kiosk eval household`: the household question set asked at the terminal, as the family would ask it.

Each household gets a fresh store built through the product path (kiosk.eval.household_store); its notes and
questions come in the order they were said and asked, so a question never sees a later note. Each question is
asked by its asker, showing their own capture, at the moment it was asked (a fixed clock), and answered as
`Assistant.answer` answers: gate, retrieval in the asker's pool with the relevance floor and the sensitive-note
rule, the kiosk's prompt, the LLM, then the answer profile's steps. The answer after each step is recorded, so
one run shows what each step changed; `steps_off` runs the profile without some steps. LLM calls go through the
eval's answer cache, so a rerun with the same prompts costs nothing.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kiosk.config import PROJECT_ROOT, KioskConfig
from kiosk.eval.answering import ANSWER_STEPS
from kiosk.eval.household_data import DEFAULT_DIR, HouseQuestion, load_households
from kiosk.eval.household_metrics import judge, split_summaries
from kiosk.eval.household_report import household_markdown
from kiosk.eval.household_store import Biometrics, HouseholdAtTerminal, Modality, household_at_terminal
from kiosk.eval.stages import Progress, no_progress
from kiosk.llm.answer_steps import ANSWER_TEMPERATURE, shown_reply
from kiosk.llm.profiles import AnswerProfile, profile_without
from kiosk.memory.scopes import scope_kind
from kiosk.memory.store import owner_scope
from kiosk.retrieval.pool import validate_query
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning

STEPS = ANSWER_STEPS  # the answer after each step, as the LoCoMo eval records them


@dataclass
class HouseholdOptions:
    data_dir: Path = DEFAULT_DIR
    split: str = "all"  # dev | test | all
    modality: Modality = "palm"
    profile: str | None = None  # None: the configured llm.answer_profile
    steps_off: tuple[str, ...] = ()
    seed: int = 0  # which benchmark identities the people get
    cache_dir: Path = PROJECT_ROOT / "bench" / "cache"
    results_dir: Path | None = None  # None: nothing written
    results_name: str | None = None  # default household_<modality>_<profile>
    command: str = ""
    tuning: RetrievalTuning = field(default_factory=lambda: DEFAULT_TUNING)


def ask(
    terminal: HouseholdAtTerminal, question: HouseQuestion, llm: Any, profile: AnswerProfile, max_tokens: int
) -> dict[str, Any]:
    """Ask `question` as its asker at its moment, as Assistant.answer does; the answer after each step and what
    the prompt held."""
    assistant = terminal.assistant
    household = terminal.household
    terminal.ask_at(question.asked_at)
    text = validate_query(question.question)
    decision, retrieval, _ = assistant.retrieve(text, terminal.probes[question.asker])
    identity = assistant.identity(decision)
    if retrieval.step_up is not None and not retrieval.notes:
        steps = dict.fromkeys(STEPS, retrieval.step_up.message)
    else:
        messages = assistant.prompt(text, retrieval, identity)
        reply = llm.chat(messages, max_tokens=max_tokens, temperature=ANSWER_TEMPERATURE).strip()
        shown = shown_reply(
            llm,
            messages,
            text,
            reply,
            notes_given=bool(retrieval.notes),
            profile=profile,
            max_tokens=max_tokens,
            temperature=ANSWER_TEMPERATURE,
            asked_on=assistant.asked_on(),
            people=assistant.known_people(retrieval),
        )
        steps = {
            "reply": reply,
            "shown": shown.first,
            "unlisted": shown.before_lists,
            "listed": shown.before_grounding,
            "answer": shown.text,
        }
        with owner_scope(assistant.store, sorted({item.note.owner_id for item in retrieval.notes})):
            assistant.store.reinforce(retrieval.note_ids, assistant.clock())
    retrieved = [terminal.note_ids.get(int(item.note.id or 0), "?") for item in retrieval.notes]
    foreign = [
        note_id
        for note_id in retrieved
        if note_id not in household.notes or not household.notes[note_id].readable_by(question.asker, household.groups)
    ]
    return {
        "household": household.id,
        "split": household.split,
        "id": question.id,
        "asker": question.asker,
        "kind": question.kind,
        "question": question.question,
        "gold": list(question.answers),
        "answer": steps["answer"],
        "steps": steps,
        "verified": identity is not None and identity.name == _name(terminal, question.asker),
        "retrieved": retrieved,
        "evidence": list(question.evidence),
        "evidence_retrieved": sum(1 for e in question.evidence if e in retrieved),
        "used_personal_memory": any(scope_kind(item.note.scope) != "public" for item in retrieval.notes),
        "below_relevance_floor": retrieval.below_relevance_floor,
        "withheld_sensitive": retrieval.withheld_sensitive,
        "step_up": retrieval.step_up is not None,
        "foreign_notes": foreign,
    }


def in_time_order(questions: Sequence[HouseQuestion]) -> list[HouseQuestion]:
    """The questions in the order they were asked (the file's order among those asked at the same moment)."""
    return sorted(questions, key=lambda question: question.asked_at)


def _name(terminal: HouseholdAtTerminal, person: str) -> str:
    return next(p.name for p in terminal.household.people if p.id == person)


def judged_rows(rows: list[dict[str, Any]], questions: dict[tuple[str, str], HouseQuestion], step: str) -> list[Any]:
    """Every row judged on its answer after `step`."""
    return [
        judge(
            row["steps"][step],
            split=row["split"],
            kind=row["kind"],
            answers=questions[(row["household"], row["id"])].answers,
            harmful=questions[(row["household"], row["id"])].harmful,
            foreign_notes_in_prompt=len(row["foreign_notes"]),
        )
        for row in rows
    ]


def run_household(
    config: KioskConfig, options: HouseholdOptions, progress: Progress = no_progress, llm: Any = None
) -> dict[str, Any]:
    """Ask every question of the chosen households; returns the results (written when options.results_dir).

    `llm` replaces the configured model (tests); otherwise the configured one runs behind the answer cache."""
    from kiosk.eval.answer_cache import AnswerCache
    from kiosk.eval.models import load_llm
    from kiosk.text import load_text_encoder

    households = load_households(options.data_dir, options.split)
    profile = profile_without(options.profile or config.llm.answer_profile, options.steps_off)
    max_tokens = config.llm.max_answer_tokens
    cache = None
    if llm is None:
        cache = AnswerCache(options.cache_dir / "answers.sqlite")
        loaded = load_llm(config, cache, options.cache_dir)
        llm, llm_name, llm_sha = loaded.llm, loaded.name, loaded.sha256
    else:
        llm_name, llm_sha = str(getattr(llm, "name", "llm")), None
    try:
        text_encoder = load_text_encoder(config)
        biometrics = Biometrics.load(config, options.modality, options.seed)
        rows: list[dict[str, Any]] = []
        setup: dict[str, Any] = {}
        total = sum(len(h.questions) for h in households)
        for household in households:
            with household_at_terminal(
                config, household, biometrics, text_encoder, llm, options.tuning, notes_up_front=False
            ) as terminal:
                asked: dict[str, dict[str, Any]] = {}
                for question in in_time_order(household.questions):
                    terminal.remember_until(question.asked_at)
                    asked[question.id] = ask(terminal, question, llm, profile, max_tokens)
                    progress("answer", len(rows) + len(asked), total)
                rows += [asked[question.id] for question in household.questions]
                terminal.remember_until()
                setup[household.id] = {
                    "split": household.split,
                    "people": len(household.people),
                    "notes_stored": len(terminal.note_ids),
                    "notes_refused": terminal.refused_notes,
                    "identities": [b.as_dict() for b in terminal.bindings],
                }
    finally:
        if cache is not None:
            cache.close()
    questions = {(h.id, q.id): q for h in households for q in h.questions}
    judged = judged_rows(rows, questions, "answer")
    for row, verdict in zip(rows, judged, strict=True):
        row |= {
            "f1": round(verdict.f1, 4),
            "exact": verdict.exact,
            "idk": verdict.unknown,
            "harmful": list(verdict.harmful),
        }
    results: dict[str, Any] = {
        "benchmark": "household",
        "command": options.command,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} · {os.cpu_count() or 1} cores shared with other jobs",
        "split": options.split,
        "modality": options.modality,
        "gate_threshold": biometrics.threshold,
        "llm": {"name": llm_name, "sha256": llm_sha, "max_answer_tokens": max_tokens},
        "answer_cache": {"hits": cache.hits, "misses": cache.misses} if cache is not None else None,
        "profile": {"name": profile.name, "steps": list(profile.steps), "steps_off": list(options.steps_off)},
        "relevance_floor": options.tuning.relevance_floor,
        "households": setup,
        "scores": split_summaries(judged),
        "after_each_step": {step: split_summaries(judged_rows(rows, questions, step)) for step in STEPS},
        "answers": rows,
    }
    if options.results_dir is not None:
        results["written"] = [str(p) for p in _write(results, options)]
    return results


def _write(results: dict[str, Any], options: HouseholdOptions) -> list[Path]:
    name = options.results_name or f"household_{options.modality}_{results['profile']['name']}".replace(" ", "_")
    options.results_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    json_path = options.results_dir / f"{name}.json"  # type: ignore[operator]
    markdown_path = json_path.with_suffix(".md")
    json_path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    markdown_path.write_text(household_markdown(results), encoding="utf-8")
    return [json_path, markdown_path]
