"""The latency bench's questions and levers: the Lever and Asked records, the lever list, the typing
scenarios, the mixed-category question draw, each question's retrieved notes (probe -> gate -> retrieval,
timed like Assistant.answer) and the answering prompt a lever builds from them, for bench/bench_latency.py."""

from __future__ import annotations

import random
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kiosk.config import KioskConfig
from kiosk.eval.locomo import Question
from kiosk.llm import prompts
from kiosk.memory.note import Note
from kiosk.retrieval.results import ScoredNote

Messages = list[dict[str, str]]
ROOT = Path(__file__).resolve().parent.parent
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
