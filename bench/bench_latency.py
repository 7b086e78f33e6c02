"""Answer latency (#14): where one question's time goes, and first-token / total latency per lever.

LoCoMo, the paper protocol's store (fast construction, cached in bench/cache/stores), palm probes: each
question is asked by its owner (the gate verifies them, retrieval runs in their notes). Questions: the
protocol's 10 % sample (seed 0), drawn category by category (multi-hop, temporal, single-hop in turn) and
conversation by conversation, so the three categories are mixed; deterministic by --seed.

The LLM runs through the kiosk's own backend (kiosk.llm.llamacpp.LlamaCppLLM) in a worker process per
lever (bench/latency_worker.py). `--mode sequential` (the default) runs one lever after the other, one
llama.cpp process at a time, so its wall times are what a terminal would see at that load (the load
average at the start and end of each lever is recorded); `--mode concurrent` runs the levers of a chunk of
questions at the same time (a load change hits all alike, but absolute times are meaningless). Before each
answer the llama context is reset, as it is in the kiosk after the note construction that follows every
answer. Wall time and process CPU time are both recorded.

Levers (baseline: the kiosk's answering prompt with 10 notes and nothing else): 5 notes, the saved KV state of the
system prompt, prefilling the prompt built from the words typed before "send" (retrieval + prefill, timed from
"send"), thread count, batch size, flash attention, an AVX-512/VNNI build of llama.cpp (`--fast-python`), flash
attention on the defaults (the kiosk's defaults since latency_50_flash.md: "compact + KV + prefill while typing +
flash attention") and speculative decoding by prompt lookup on them (answer tokens drafted from the prompt's
n-grams; the 135M model cannot draft for the 0.5B: their vocabularies differ). Owner F1 (LoCoMo token F1, the
protocol's scoring) comes from the same answers. (Earlier runs also timed the former "detailed" and the eval's
"short" prompt, the prefilled notes kept at "send" and the prefilled notes moved in the KV cache: those
experiments are removed, their results stay in bench/results.) `--token-counts` only counts prompt tokens per
variant and how much of the final prompt the typed prompt shares (no generation), cheap enough for many
questions. `--amx-python` (a venv with the bootstrap's "amx" llama.cpp build) runs instead
the defaults on the AVX-512 build against the AMX build with the model requantised to Q8_0 (kiosk.llm.requant),
the same Q8_0 file on the AVX-512 build and the shipped file on the AMX build.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.common import percentiles_ms, table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.eval.answering import clean_answer
from kiosk.eval.locomo import Question
from kiosk.eval.metrics import CATEGORY_NAMES, aggregate, score_answer
from kiosk.llm import prompts
from kiosk.memory.note import Note
from kiosk.retrieval.results import ScoredNote

Messages = list[dict[str, str]]
ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "bench" / "latency_worker.py"
CACHE = ROOT / "bench" / "cache"


@dataclass(frozen=True)
class Lever:
    name: str
    notes: int = 10
    kv_prefix: bool = False
    flash_attn: bool = False
    threads: int | None = None  # None: the run's --threads
    prefill: str | None = None  # None | "last word" (typed all but the last word) | "half" (half the words)
    n_batch: int = 512
    build: str = "portable"  # portable | avx512 | amx
    gguf: str = "shipped"  # shipped | q8_0 | q4_0 (the manifest model requantised, kiosk.llm.requant)
    prompt_lookup: int = 0  # draft this many answer tokens from the prompt's n-grams (speculative decoding)
    non_owner: bool = False  # also answer with another user's notes (prompt variants only)

    def changes_outputs(self) -> bool:
        return self.notes != 10


@dataclass
class Asked:
    """One question's retrieved notes, each list most relevant first (so `[:n]` is the top n); prompts list
    them oldest first unless a lever says otherwise."""

    question: Question
    owner: list[Note]
    owner_person: str | None
    non_owner: list[Note]
    non_owner_person: str | None
    typed: dict[str, list[Note]]  # {typing scenario: notes retrieved for the words typed so far}
    stages_ms: dict[str, float] = field(default_factory=dict)


def levers(fast_python: str | None, amx_python: str | None = None) -> list[Lever]:
    defaults = Lever("compact + KV + prefill while typing", kv_prefix=True, prefill="last word")
    chosen = [
        Lever("baseline"),
        Lever("compact, 5 notes", notes=5),
        Lever("compact, 1 thread", threads=1),
        Lever("compact, 2 threads", threads=2),
        Lever("compact, batch 1024", n_batch=1024),
        Lever("compact + flash attention", flash_attn=True),
        Lever("compact + system KV state", kv_prefix=True),
        Lever("compact + KV + prefill (half typed)", kv_prefix=True, prefill="half"),
        defaults,
        replace(defaults, name="compact + KV + prefill while typing + flash attention", flash_attn=True),
        replace(
            defaults,
            name="compact + KV + prefill while typing + flash attention + prompt lookup (4 tokens)",
            flash_attn=True,
            prompt_lookup=4,
        ),
        # The kiosk's defaults on the shipped file and on the same model requantised (kiosk.llm.requant): the
        # quantisation is the one lever left that speeds up prompt processing itself (bench/results/quant.md).
        replace(defaults, name="defaults, Q8_0", flash_attn=True, gguf="q8_0"),
        replace(defaults, name="defaults, Q4_0", flash_attn=True, gguf="q4_0"),
    ]
    if amx_python:
        flash = replace(defaults, name=f"{defaults.name} + flash attention", flash_attn=True)
        return [
            replace(flash, name=f"{flash.name}, AVX-512 build", build="avx512"),
            replace(flash, name=f"{flash.name}, AMX build, Q8_0", build="amx", gguf="q8_0"),
            replace(flash, name=f"{flash.name}, AVX-512 build, Q8_0", build="avx512", gguf="q8_0"),
            replace(flash, name=f"{flash.name}, AMX build", build="amx"),
        ]
    if not fast_python:
        return chosen
    # The same levers on both builds in one run, so the build's own share is visible next to each.
    return [
        *chosen,
        Lever("AVX-512 build", build="avx512"),
        replace(defaults, name="compact + KV + prefill while typing, AVX-512 build", build="avx512"),
    ]


TYPING = {
    "half": "half the words typed",
    "last word": "all but the last word typed (the person types it and sends without a pause)",
}


def typed_words(question: str, scenario: str) -> str:
    """The words typed at the last pause before "send" under a typing scenario."""
    words = question.split()
    if scenario == "half":
        return " ".join(words[: max(1, len(words) // 2)])
    return " ".join(words[: max(1, len(words) - 1)])


def mixed_sample(questions: Sequence[Question], count: int, seed: int) -> list[Question]:
    """`count` questions taken category by category in turn, and inside a category conversation by
    conversation, each conversation's questions in a seeded order: the categories stay mixed at any count."""
    by_category: dict[int, dict[str, list[Question]]] = {}
    for question in questions:
        by_category.setdefault(question.category, {}).setdefault(question.conversation_id, []).append(question)
    queues: list[list[Question]] = []
    for category in sorted(by_category):
        per_conversation = by_category[category]
        for conversation, items in per_conversation.items():
            random.Random(f"{seed}:{conversation}:{category}").shuffle(items)
        interleaved: list[Question] = []
        while any(per_conversation.values()):
            for items in per_conversation.values():
                if items:
                    interleaved.append(items.pop(0))
        queues.append(interleaved)
    picked: list[Question] = []
    while len(picked) < count and any(queues):
        for queue in queues:
            if queue and len(picked) < count:
                picked.append(queue.pop(0))
    return picked


# ---- contexts: probe -> gate -> retrieval, timed like Assistant.answer ------------------------------


def build_contexts(config: KioskConfig, count: int, modality: str, work_dir: Path, seed: int = 0) -> list[Asked]:
    from kiosk.app.build import build_assistant
    from kiosk.calibration.active import active_threshold
    from kiosk.eval.assignments import benchmark_dir, bind_identities, non_owner_of, read_identity_images
    from kiosk.eval.conditions import benchmark_probe
    from kiosk.eval.locomo import conversations_digest, load_conversations, locomo_path, select_questions
    from kiosk.eval.models import embed_benchmark_image, load_embedder
    from kiosk.eval.store import cached_store_path, store_key
    from kiosk.memory.sqlite_store import SqliteStore
    from kiosk.text import load_text_encoder

    source = locomo_path(config.paths.eval_data_dir)
    conversations = load_conversations(source)
    questions = mixed_sample(select_questions(conversations, 0.1, 0), count, seed)
    cached = cached_store_path(
        CACHE, store_key(config, conversations_digest(conversations, source), "fast", None, None)
    )
    if not cached.is_file():
        sys.exit(
            f"no cached LoCoMo store {cached}: run `kiosk eval locomo --modality {modality} --retrieval-only` once"
        )
    working = work_dir / "store.db"
    shutil.copyfile(cached, working)
    store = SqliteStore(working)
    embedder = load_embedder(config, modality)
    encoder = load_text_encoder(config)
    images = read_identity_images(config.paths.eval_data_dir, modality)
    order = [c.sample_id for c in conversations]
    bindings = bind_identities(order, images, 0, modality, None)
    image_root = benchmark_dir(config.paths.eval_data_dir, modality)
    user_ids: dict[str, int] = {}
    for conversation, binding in zip(conversations, bindings, strict=True):
        user = store.user_by_name(conversation.sample_id)
        assert user is not None and user.id is not None
        gallery = embed_benchmark_image(embedder, modality, image_root / binding.gallery_image)
        store.set_templates(user.id, modality, gallery[None, :], embedder.model_sha256)
        user_ids[conversation.sample_id] = user.id
    names = {uid: name for name, uid in user_ids.items()}
    tau = active_threshold(config, modality, embedder.model_sha256)
    assistant = build_assistant(config, store, encoder, thresholds={modality: tau})
    assistant.retrieve("warm up", None)
    asked = []
    for question in questions:
        index = order.index(question.conversation_id)
        started = time.perf_counter()
        vector = embed_benchmark_image(embedder, modality, image_root / bindings[index].probe_image)
        probe = benchmark_probe(vector, modality, embedder.model_sha256)
        probe_ms = (time.perf_counter() - started) * 1000.0
        decision, retrieval, timings = assistant.retrieve(question.question, probe)
        owner_person = names.get(decision.verified_user_id) if decision.verified_user_id else None
        intruder = non_owner_of(bindings, index)
        intruder_probe = benchmark_probe(
            embed_benchmark_image(embedder, modality, image_root / intruder.probe_image),
            modality,
            embedder.model_sha256,
        )
        other, other_retrieval, _ = assistant.retrieve(question.question, intruder_probe)
        typed = {
            scenario: ranked(assistant.retrieve(typed_words(question.question, scenario), probe)[1].notes)
            for scenario in TYPING
        }
        asked.append(
            Asked(
                question,
                ranked(retrieval.notes),
                owner_person,
                ranked(other_retrieval.notes),
                names.get(other.verified_user_id) if other.verified_user_id else None,
                typed,
                {"probe": probe_ms, **timings},
            )
        )
    store.close()
    return asked


def ranked(notes: Sequence[ScoredNote]) -> list[Note]:
    """Most relevant first: the order the retriever ranked them in (it returns them oldest first)."""
    return [item.note for item in sorted(notes, key=lambda item: (-item.score, item.note.id or 0))]


def chronological(notes: Sequence[Note]) -> list[Note]:
    return sorted(notes, key=lambda n: (n.timestamp, n.id or 0))


def messages_for(lever: Lever, question: str, notes: Sequence[Note], person: str | None) -> Messages:
    """The kiosk's answering prompt with the lever's number of notes, oldest first."""
    kept = chronological(notes[: lever.notes])
    return prompts.compact_answer_messages(question, [(n.timestamp, n.content, n.context) for n in kept], person)


# ---- the run --------------------------------------------------------------------------------------


def run_worker(python: str, job: dict[str, Any], work_dir: Path) -> dict[str, Any]:
    job_path = work_dir / "job.json"
    out_path = work_dir / "out.json"
    job_path.write_text(json.dumps(job))
    subprocess.run([python, str(WORKER), str(job_path), str(out_path)], check=True, cwd=ROOT)
    return dict(json.loads(out_path.read_text()))


def worker_job(
    model_path: Path, lever: Lever, part: Sequence[Asked], threads: int, max_tokens: int
) -> tuple[dict[str, Any], list[str]]:
    conditions = ["owner", "non_owner"] if lever.non_owner else ["owner"]
    requests = []
    for condition in conditions:
        for item in part:
            notes, person = (
                (item.owner, item.owner_person) if condition == "owner" else (item.non_owner, item.non_owner_person)
            )
            prefill = None
            if lever.prefill:
                typed = typed_words(item.question.question, lever.prefill)
                prefill = messages_for(lever, typed, item.typed[lever.prefill], person)
            requests.append(
                {"messages": messages_for(lever, item.question.question, notes, person), "prefill": prefill}
            )
    job = {
        "model": str(model_path),
        "llama": {
            "n_ctx": 2048,
            "threads": lever.threads or threads,
            "flash_attn": lever.flash_attn,
            "n_batch": lever.n_batch,
            "prompt_lookup_tokens": lever.prompt_lookup,
        },
        "kv_prefix": lever.kv_prefix,
        "max_tokens": max_tokens,
        "requests": requests,
    }
    return job, conditions


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


Cell = tuple[str, Path, Lever]  # (model name, GGUF path, lever)


def time_levers(
    cells: Sequence[Cell],
    asked: Sequence[Asked],
    pythons: dict[str, str],
    threads: int,
    max_tokens: int,
    chunk: int,
    work_dir: Path,
    say: Callable[[str], None],
    deadline: float,
    sequential: bool,
) -> dict[tuple[str, str], dict[str, Any]]:
    """{(model, lever): {"owner": [per question], "non_owner": [...], "load": [...], "seconds": s}}.

    The questions go in chunks; every chunk is answered by every cell before the next one starts, so when
    the budget (`deadline`, epoch seconds) ends the run early all cells have the same questions, and a load
    change on the shared machine is spread over all of them. Sequential: the cells of a chunk one after the
    other (one llama.cpp process at a time); concurrent: at the same time."""
    out: dict[tuple[str, str], dict[str, Any]] = {
        (model, lever.name): {"owner": [], "non_owner": [], "system_info": [], "load": [], "seconds": 0.0}
        for model, _, lever in cells
    }

    def one(cell: Cell, part: Sequence[Asked], start: int) -> None:
        model, path, lever = cell
        job, conditions = worker_job(path, lever, part, threads, max_tokens)
        cell_dir = work_dir / str(cells.index(cell))
        cell_dir.mkdir(exist_ok=True)
        load_start, began = load_average(), time.time()
        result = run_worker(pythons[lever.build], job, cell_dir)
        entry = out[(model, lever.name)]
        entry["seconds"] += time.time() - began
        entry["load"].append({"start": load_start, "end": load_average()})
        rows = result["results"]
        for i, condition in enumerate(conditions):
            entry[condition].extend(rows[i * len(part) : (i + 1) * len(part)])
        entry["system_info"].append({"text": result["system_info"]})
        say(
            f"{model} · {lever.name}: questions {start + len(part)}/{len(asked)} "
            f"(load {load_start} -> {entry['load'][-1]['end']}, {time.strftime('%H:%M:%S')})"
        )

    for start in range(0, len(asked), chunk):
        if start and time.time() > deadline:
            say(f"budget spent after {start} questions")
            break
        part = asked[start : start + chunk]
        if sequential:
            for cell in cells:
                one(cell, part, start)
        else:
            with ThreadPoolExecutor(max_workers=len(cells)) as pool:
                list(pool.map(lambda cell, part=part, start=start: one(cell, part, start), cells))
    return out


def f1_scores(rows: Sequence[dict[str, Any]], asked: Sequence[Asked]) -> dict[str, Any]:
    scored = [
        score_answer(clean_answer(row["text"]), item.question.answer, item.question.category)
        for row, item in zip(rows, asked, strict=False)
    ]
    return aggregate(scored).as_dict()


def f1_of(rows: Sequence[dict[str, Any]], asked: Sequence[Asked]) -> float:
    return float(f1_scores(rows, asked)["average"]["f1"])


def summarise(
    model: str, chosen: Sequence[Lever], timed: dict[str, dict[str, Any]], asked: Sequence[Asked]
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for lever in chosen:
        rows = timed[lever.name]["owner"]
        first = percentiles_ms([r["first_token_s"] for r in rows])
        total = percentiles_ms([r["total_s"] for r in rows])
        first_cpu = percentiles_ms([r["first_token_cpu_s"] for r in rows])
        total_cpu = percentiles_ms([r["total_cpu_s"] for r in rows])
        entry = {
            "first_token_cpu_p50_ms": round(first_cpu["p50_ms"], 1),
            "first_token_cpu_p95_ms": round(first_cpu["p95_ms"], 1),
            "total_cpu_p50_ms": round(total_cpu["p50_ms"], 1),
            "total_cpu_p95_ms": round(total_cpu["p95_ms"], 1),
            "first_token_p50_ms": round(first["p50_ms"], 1),
            "first_token_p95_ms": round(first["p95_ms"], 1),
            "total_p50_ms": round(total["p50_ms"], 1),
            "total_p95_ms": round(total["p95_ms"], 1),
            "prompt_tokens_p50": statistics.median(r["prompt_tokens"] for r in rows),
            "answer_pieces_p50": statistics.median(r["completion_tokens"] for r in rows),
            "reused_tokens_p50": statistics.median(r.get("reused_tokens", 0) for r in rows),
            "prefill_while_typing_p50_ms": round(statistics.median(r.get("prefill_s", 0.0) for r in rows) * 1000, 1),
            "questions": len(rows),
            "owner_f1": round(f1_of(rows, asked), 2),
            "owner_f1_per_category": {
                name: value["f1"] for name, value in f1_scores(rows, asked)["per_category"].items()
            },
            "per_question": [
                {
                    key: row.get(key)
                    for key in ("first_token_s", "total_s", "prompt_tokens", "reused_tokens", "prefill_s")
                }
                for row in rows
            ],
            "load": timed[lever.name]["load"],
            "minutes": round(timed[lever.name]["seconds"] / 60, 1),
            "build": timed[lever.name]["system_info"][0]["text"],
        }
        if timed[lever.name]["non_owner"]:
            entry["non_owner_f1"] = round(f1_of(timed[lever.name]["non_owner"], asked), 2)
            entry["gap_f1"] = round(entry["owner_f1"] - entry["non_owner_f1"], 2)
        summary[lever.name] = entry
    return summary


def stage_breakdown(asked: Sequence[Asked], timed_compact: Sequence[dict[str, Any]], lever: Lever) -> dict[str, float]:
    """Per-stage medians (ms) of the answer path under `lever`: probe, gate, retrieval, prompt, LLM."""
    build_ms = []
    for item in asked:
        started = time.perf_counter()
        messages_for(lever, item.question.question, item.owner, item.owner_person)
        build_ms.append((time.perf_counter() - started) * 1000.0)
    first = [r["first_token_s"] * 1000.0 for r in timed_compact]
    generation = [(r["total_s"] - r["first_token_s"]) * 1000.0 for r in timed_compact]
    return {
        "probe_ms": round(statistics.median(a.stages_ms["probe"] for a in asked), 2),
        "gate_ms": round(statistics.median(a.stages_ms["gate"] for a in asked), 2),
        "retrieval_ms": round(
            statistics.median(a.stages_ms.get("encode", 0.0) + a.stages_ms.get("retrieve", 0.0) for a in asked), 2
        ),
        "prompt_build_ms": round(statistics.median(build_ms), 3),
        "prompt_processing_ms": round(statistics.median(first), 1),
        "generation_ms": round(statistics.median(generation), 1),
    }


def prompt_token_counts(config: KioskConfig, asked: Sequence[Asked], variants: Sequence[Lever]) -> dict[str, Any]:
    """Prompt tokens per variant for both GGUFs, and how many leading tokens the prompt built from the typed
    words shares with the final one (what a prefill can save). No generation: cheap for many questions."""
    from kiosk.llm.llamacpp import LlamaCppLLM
    from kiosk.models import ModelStore

    models = ModelStore(config.paths.models)
    out: dict[str, Any] = {}
    compact = Lever("compact")
    for model in ("qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"):
        llm = LlamaCppLLM(models.ensure(model), n_ctx=2048, threads=1)

        def tokens(messages: Messages, llm: LlamaCppLLM = llm) -> list[int]:
            return llm.prompt_tokens(messages) or []

        counts: dict[str, list[float]] = {
            lever.name: [len(tokens(messages_for(lever, a.question.question, a.owner, a.owner_person))) for a in asked]
            for lever in variants
        }
        for scenario in TYPING:
            shares, after_send = [], []
            for a in asked:
                final = tokens(messages_for(compact, a.question.question, a.owner, a.owner_person))
                typed = tokens(
                    messages_for(compact, typed_words(a.question.question, scenario), a.typed[scenario], a.owner_person)
                )
                common = next((i for i, (x, y) in enumerate(zip(final, typed, strict=False)) if x != y), len(final))
                shares.append(common / len(final))
                after_send.append(float(len(final) - common))
            counts[f"compact: share of the prompt prefilled, {scenario}"] = shares
            counts[f"compact: tokens to process after send, {scenario}"] = after_send
            counts[f"compact: same notes as the final question, {scenario}"] = [
                float({n.id for n in a.typed[scenario]} == {n.id for n in a.owner}) for a in asked
            ]
        out[model] = {
            name: {
                "p50": statistics.median(values),
                "p95": float(percentiles_ms(values)["p95_ms"]) / 1000.0,
                "mean": round(statistics.fmean(values), 3),
            }
            for name, values in counts.items()
        }
        llm.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=50, help="questions timed per lever")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mixed-category question draw")
    parser.add_argument(
        "--mode",
        default="sequential",
        choices=["sequential", "concurrent"],
        help="one lever (one llama.cpp process) at a time, or the levers of a chunk at the same time",
    )
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads unless the lever says otherwise")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument(
        "--chunk", type=int, default=5, help="questions per worker run; every lever answers a chunk before the next"
    )
    parser.add_argument("--models", default="qwen2.5-coder-0.5b-instruct,smollm2-135m-instruct")
    parser.add_argument("--modality", default="palm", choices=["face", "palm"])
    parser.add_argument("--fast-python", default=None, help="python of a venv with an AVX-512/VNNI llama-cpp-python")
    parser.add_argument(
        "--amx-python", default=None, help="python of a venv with the AMX llama-cpp-python (then: the AMX levers)"
    )
    parser.add_argument("--only", default=None, help="semicolon-separated lever names (default: all)")
    parser.add_argument(
        "--small-levers",
        default="baseline;compact + system KV state;compact + KV + prefill while typing",
        help="levers run for models other than the default GGUF",
    )
    parser.add_argument("--name", default="latency")
    parser.add_argument(
        "--token-counts", action="store_true", help="only count the prompt tokens of each prompt variant (no LLM)"
    )
    parser.add_argument(
        "--budget-min", type=float, default=600.0, help="start no new lever / chunk after this many minutes"
    )
    args = parser.parse_args()

    from kiosk.llm.requant import requantized_model
    from kiosk.models import ModelStore

    config = load_config()
    store = ModelStore(config.paths.models)
    pythons = {
        "portable": sys.executable,
        "avx512": args.fast_python or sys.executable,
        "amx": args.amx_python or sys.executable,
    }
    chosen = levers(args.fast_python, args.amx_python)
    if args.only:
        wanted = {name.strip() for name in args.only.split(";")}
        chosen = [lever for lever in chosen if lever.name in wanted]
    say = print
    started = time.time()
    load_start = load_average()
    if args.token_counts:
        variants = [
            lever for lever in levers(None) if not lever.kv_prefix and not lever.prefill and lever.threads is None
        ]
        with tempfile.TemporaryDirectory(prefix="latency-", dir=CACHE) as tmp:
            asked = build_contexts(config, args.questions, args.modality, Path(tmp), args.seed)
        counts = prompt_token_counts(config, asked, variants)
        rows = [
            [model, name, v["p50"], v["p95"], v["mean"]] for model, per in counts.items() for name, v in per.items()
        ]
        md = (
            f"Prompt tokens of the owner's answer prompt for {len(asked)} LoCoMo questions ({categories(asked)}; "
            "top-10 notes, palm probes), per prompt variant and GGUF tokenizer; and for the compact prompt, the "
            "share of its leading tokens the prompt built from the typed words (and their notes) already holds, "
            f"per typing scenario ({TYPING}).\n\n" + table(["model", "prompt", "p50", "p95", "mean"], rows)
        )
        write_results(f"{args.name}_prompt_tokens", {"questions": len(asked), "prompt_tokens": counts}, md)
        return
    per_model: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="latency-", dir=CACHE) as tmp:
        work_dir = Path(tmp)
        asked = build_contexts(config, args.questions, args.modality, work_dir, args.seed)
        say(f"contexts for {len(asked)} questions ready ({categories(asked)})")
        deadline = started + args.budget_min * 60
        small = {name.strip() for name in args.small_levers.split(";")}
        per_model_levers = {
            model: chosen if model == config.llm.model else [lever for lever in chosen if lever.name in small]
            for model in [m.strip() for m in args.models.split(",")]
        }
        cells = [
            (
                model,
                store.ensure(model) if lever.gguf == "shipped" else requantized_model(store, model, lever.gguf)[0],
                lever,
            )
            for model, model_levers in per_model_levers.items()
            for lever in model_levers
        ]
        timed_cells = time_levers(
            cells,
            asked,
            pythons,
            args.threads,
            args.max_tokens,
            args.chunk,
            work_dir,
            say,
            deadline,
            args.mode == "sequential",
        )
        answered = min(len(entry["owner"]) for entry in timed_cells.values())
        asked = asked[:answered]
        for model, model_levers in per_model_levers.items():
            timed = {lever.name: timed_cells[(model, lever.name)] for lever in model_levers}
            summary = summarise(model, model_levers, timed, asked)
            fastest = min(model_levers, key=lambda lever: summary[lever.name]["first_token_p50_ms"])
            per_model[model] = {
                "levers": summary,
                "stages_baseline": stage_breakdown(asked, timed["baseline"]["owner"], model_levers[0])
                if "baseline" in timed
                else None,
                "stages_all": stage_breakdown(asked, timed[model_levers[-1].name]["owner"], model_levers[-1]),
                "stages_all_lever": model_levers[-1].name,
                "fastest": fastest.name,
                "answers": {name: [row["text"] for row in rows["owner"]] for name, rows in timed.items()},
            }
    figures = {
        "questions": len(asked),
        "seed": args.seed,
        "mode": args.mode,
        "threads": args.threads,
        "max_tokens": args.max_tokens,
        "minutes": round((time.time() - started) / 60, 1),
        "load_average": {"start": load_start, "end": load_average()},
        "categories": categories(asked),
        "question_keys": [a.question.key for a in asked],
        "levers": [lever.__dict__ for lever in chosen],
        "models": per_model,
    }
    write_results(args.name, figures, render(figures))


def categories(asked: Sequence[Asked]) -> dict[str, int]:
    return {
        CATEGORY_NAMES[c]: sum(1 for a in asked if a.question.category == c)
        for c in sorted({a.question.category for a in asked})
    }


def render(figures: dict[str, Any]) -> str:
    how = (
        "one lever after the other, one llama.cpp process at a time (sequential mode)"
        if figures["mode"] == "sequential"
        else "the levers of a chunk of questions at the same time (concurrent mode: absolute times are not a "
        "terminal's, compare ratios)"
    )
    parts = [
        f"{figures['questions']} LoCoMo questions (the protocol's 10 % sample, seed 0, drawn category by category "
        f"with seed {figures['seed']}: {figures['categories']}), palm probes, retrieval K = 10; llama.cpp through "
        f"the kiosk's backend with {figures['threads']} threads unless the lever says otherwise, greedy, at most "
        f"{figures['max_tokens']} answer tokens; the llama context reset before each answer (as after the note "
        f"construction that follows each kiosk answer); {how}. Took {figures['minutes']} min; load average "
        f"(1 min) {figures['load_average']['start']} at the start, {figures['load_average']['end']} at the end, per "
        'lever in the last column. Times are from "send" to the first piece of the answer and to its end, '
        'wall clock and process CPU (CPU sums both threads). "Prefill while typing": retrieval and prompt '
        'prefill for the words typed at the last pause before "send" ran untimed first; "reused" = prompt '
        'tokens already in the context at "send". Prompt processing = time to the first piece (it includes one '
        "decode step); generation = the rest.",
    ]
    for model, result in figures["models"].items():
        rows = []
        for name, entry in result["levers"].items():
            loads = entry["load"]
            rows.append(
                [
                    name,
                    entry["first_token_p50_ms"],
                    entry["first_token_p95_ms"],
                    entry["total_p50_ms"],
                    entry["total_p95_ms"],
                    entry["first_token_cpu_p50_ms"],
                    entry["total_cpu_p50_ms"],
                    entry["prompt_tokens_p50"],
                    entry["reused_tokens_p50"],
                    entry["prefill_while_typing_p50_ms"],
                    entry["answer_pieces_p50"],
                    entry["questions"],
                    entry["owner_f1"],
                    ", ".join(f"{k} {v}" for k, v in entry["owner_f1_per_category"].items()),
                    f"{loads[0]['start']} -> {loads[-1]['end']}",
                ]
            )
        parts.append(f"## {model}")
        parts.append(
            table(
                [
                    "lever",
                    "first token p50 ms (wall)",
                    "p95",
                    "total p50 ms (wall)",
                    "p95",
                    "first token p50 ms (CPU)",
                    "total p50 ms (CPU)",
                    "prompt tokens p50",
                    "reused p50",
                    "prefill before send p50 ms (wall)",
                    "answer pieces p50",
                    "questions",
                    "owner F1",
                    "owner F1 per category",
                    "load",
                ],
                rows,
            )
        )
        last = result.get("stages_all_lever", "all together")
        for label, key in (("baseline", "stages_baseline"), (last, "stages_all")):
            stages = result.get(key)
            if stages:
                parts.append(f"Stages, {label} (medians, ms): " + ", ".join(f"{k} {v}" for k, v in stages.items()))
        parts.append(f"Fastest first token: {result['fastest']}.")
    return "\n\n".join(parts)


if __name__ == "__main__":
    main()
