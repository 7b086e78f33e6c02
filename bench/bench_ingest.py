"""Ingest throughput (notes/s) fast vs LLM construction, LLM tokens/s, store size per 1,000 notes, and
LLM construction quality (parsed first time / needed the retry / fell back) on LoCoMo turns.

.venv/bin/python -m bench.bench_ingest [--fast-turns 300] [--llm-turns 20] [--quality-turns 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles_ms, table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.errors import KioskError
from kiosk.llm import create_llm, prompts
from kiosk.llm.backend import LLM, Message, Usage
from kiosk.llm.structured import ask_structured
from kiosk.memory import Note, SqliteStore
from kiosk.memory.build import CONSTRUCTION, BuildReport, Draft, NoteAttributes, NoteBuilder, human_date
from kiosk.memory.ingest import FAST_CHUNK, Turn, conversation_turns, load_conversations
from kiosk.text import load_text_encoder


class MeteredLLM:
    """Wraps an LLM and adds up the usage of every call."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[Usage] = []
        self.last_usage = Usage()

    def chat(self, messages: list[Message], **kwargs: Any) -> str:
        reply = self.inner.chat(messages, **kwargs)
        self.last_usage = getattr(self.inner, "last_usage", Usage())
        self.calls.append(self.last_usage)
        return reply

    def stream(self, messages: list[Message], **kwargs: Any) -> Iterator[str]:
        return self.inner.stream(messages, **kwargs)

    def totals(self) -> dict[str, float]:
        completion = sum(u.completion_tokens for u in self.calls)
        prompt = sum(u.prompt_tokens for u in self.calls)
        seconds = sum(u.seconds for u in self.calls)
        return {
            "calls": len(self.calls),
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "seconds": seconds,
            "completion_tokens_per_s": completion / seconds if seconds else 0.0,
        }


def locomo_turns(config: KioskConfig) -> dict[str, list[Turn]]:
    samples = load_conversations(config.paths.eval_data_dir / "locomo" / "locomo10.json")
    out = {}
    for index, sample in enumerate(samples):
        name, items = conversation_turns(sample, index)
        out[name] = [t for t in items if isinstance(t, Turn)]
    return out


def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def ingest(builder: NoteBuilder, store: SqliteStore, turns: list[Turn], mode: str, batch: int = 1) -> dict[str, Any]:
    """Build notes for `turns` in order; with batch > 1 (fast import), latency is amortised per batch."""
    owner = store.add_user(f"{mode}-{batch}-{turns[0].conversation}").id
    latencies: list[float] = []
    reports: list[BuildReport] = []
    started = time.perf_counter()
    for start in range(0, len(turns), batch):
        group = turns[start : start + batch]
        drafts = [Draft(owner, t.text, t.timestamp, "face", t.speaker, "import", t.dia_id) for t in group]
        t0 = time.perf_counter()
        results = builder.build_many(drafts, "llm" if mode == "llm" else "fast")
        elapsed = time.perf_counter() - t0
        for result in results:
            if isinstance(result, KioskError):
                raise result
            reports.append(result)
        latencies.extend([elapsed / len(group)] * len(group))
        print(f"  {mode} {len(reports)}/{len(turns)} {elapsed:.2f}s", flush=True)
    total = time.perf_counter() - started
    return {
        "notes": len(turns),
        "batch": batch,
        "seconds": total,
        "notes_per_s": len(turns) / total,
        "per_note": percentiles_ms(latencies),
        "attributes": dict(Counter(r.attributes for r in reports)),
        "evolution": dict(Counter(r.evolution for r in reports)),
        "links_per_note": float(np.mean([len(r.linked) for r in reports])),
        "evolved_neighbours": sum(len(r.evolved_neighbours) for r in reports),
        "examples": [r.note.as_dict() for r in reports[:3]],
    }


def size_per_thousand(directory: Path, turns: list[Turn], count: int) -> dict[str, Any]:
    """Bytes per 1,000 notes with real LoCoMo contents, 5 keywords, a context line and a 384-d vector each."""
    path = directory / "size.db"
    store = SqliteStore(path)
    owner = store.add_user("size").id
    rng = np.random.default_rng(0)
    add_latency = []
    for i in range(count):
        turn = turns[i % len(turns)]
        vector = rng.standard_normal(384).astype(np.float32)
        note = Note(
            None,
            owner,
            "face",
            turn.text,
            turn.timestamp,
            keywords=turn.text.split()[:5],
            tags=[],
            context=f"{turn.speaker} said this on {human_date(turn.timestamp)}.",
            embedding=vector / np.linalg.norm(vector),
            source="import",
            source_ref=f"{i}:{turn.dia_id}",  # unique per owner: the turns repeat and come from two conversations
        )
        t0 = time.perf_counter()
        store.add_note(note)
        add_latency.append(time.perf_counter() - t0)
    store.checkpoint()
    size = store_bytes(path)
    store.close()
    return {
        "notes": count,
        "bytes": size,
        "mb_per_1000_notes": size / count * 1000 / 1e6,
        "add_note": percentiles_ms(add_latency),
    }


def construction_quality(
    llm: LLM, turns: list[Turn], max_tokens: int, checkpoint: Callable[[Counter[str]], None]
) -> dict[str, int]:
    outcomes: Counter[str] = Counter()
    for i, turn in enumerate(turns, start=1):
        result = ask_structured(
            llm,
            prompts.note_messages(turn.text, turn.speaker, human_date(turn.timestamp)),
            NoteAttributes,
            prompts.NOTE_SCHEMA,
            max_tokens=max_tokens,
            what=f"bench {turn.dia_id}",
        )
        outcomes[result.outcome] += 1
        print(f"  quality {i}/{len(turns)} {result.outcome}", flush=True)
        if i % 5 == 0:
            checkpoint(outcomes)
    return dict(outcomes)


def save(figures: dict[str, Any], args: argparse.Namespace, config: KioskConfig, backend: str, complete: bool) -> Path:
    """Write the results so far (the LLM phases take long on a shared CPU; partial results are marked)."""
    figures["complete"] = complete
    fast = figures["locomo.fast"]
    size = figures["store.size"]
    rows = [
        [
            "fast",
            fast["notes"],
            round(fast["notes_per_s"], 2),
            round(fast["per_note"]["p50_ms"], 1),
            round(fast["per_note"]["p95_ms"], 1),
            round(fast["links_per_note"], 2),
            "-",
        ],
    ]
    parts = [
        ("" if complete else "**Partial run: the LLM phases had not finished when this was written.**\n\n")
        + f"LoCoMo conv-26 turns in order, one owner, default config (LLM {config.llm.model}, "
        f"{args.threads} llama.cpp thread(s), text encoder on {backend}). Each note is its own committed "
        f"transaction (WAL, synchronous=FULL); fast mode encodes turns in batches of {FAST_CHUNK} as the import does.",
    ]
    single = figures["locomo.fast_single"]
    rows[0][0] = f"fast, batched import ({FAST_CHUNK}/batch)"
    rows.append(
        [
            "fast, one at a time (remember)",
            single["notes"],
            round(single["notes_per_s"], 2),
            round(single["per_note"]["p50_ms"], 1),
            round(single["per_note"]["p95_ms"], 1),
            round(single["links_per_note"], 2),
            "-",
        ]
    )
    slow = figures.get("locomo.llm")
    if slow:
        rows.append(
            [
                "llm",
                slow["notes"],
                round(slow["notes_per_s"], 3),
                round(slow["per_note"]["p50_ms"], 1),
                round(slow["per_note"]["p95_ms"], 1),
                round(slow["links_per_note"], 2),
                round(slow["llm"]["completion_tokens_per_s"], 2),
            ]
        )
    parts.append(table(["mode", "notes", "notes/s", "p50 ms/note", "p95 ms/note", "links/note", "LLM tokens/s"], rows))
    if slow:
        parts.append(
            f"Fast mode is {fast['notes_per_s'] / slow['notes_per_s']:.0f}x faster than LLM mode. LLM tokens/s = "
            f"completion tokens / wall time of the LLM calls (prompt evaluation included): "
            f"{slow['llm']['completion_tokens']} completion + {slow['llm']['prompt_tokens']} prompt tokens in "
            f"{slow['llm']['seconds']:.1f} s over {slow['llm']['calls']} calls. Linking/evolution replies: "
            f"{json.dumps(slow['evolution'])} ('none' = no earlier note to link to); neighbours evolved: "
            f"{slow['evolved_neighbours']}."
        )
    parts.append(
        "Store size:\n\n"
        + table(
            ["measurement", "notes", "MB per 1,000 notes", "add_note p50 ms", "add_note p95 ms"],
            [
                ["fast import (one owner)", fast["notes"], round(fast["mb_per_1000_notes"], 2), "-", "-"],
                [
                    "direct add_note, real LoCoMo contents (one owner)",
                    size["notes"],
                    round(size["mb_per_1000_notes"], 2),
                    round(size["add_note"]["p50_ms"], 2),
                    round(size["add_note"]["p95_ms"], 2),
                ],
            ],
        )
        + "\n\nEach note keeps its embedding in the notes table (source of truth) and in the vec0 index, "
        "so vectors account for about 3 KB of each note."
    )
    q = figures.get("locomo.construction_quality")
    if q:
        parts.append(
            f"LLM construction quality on {q['turns']} LoCoMo turns (the LLM-mode turns of conv-26 plus turns of "
            "conv-30, construction prompt only), JSON-schema constrained decoding:\n\n"
            + table(
                ["turns", "parsed first time", "needed the retry", "fell back (stored without attributes)"],
                [[q["turns"], q["parsed_first_time"], q["needed_retry"], q["fell_back"]]],
            )
        )
    parts.append(
        f"Machine load during the run (1-minute load average at the end): {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores — other helpers' tests and benchmarks ran at the same time, so absolute LLM "
        "figures are pessimistic; the fast/LLM ratio within this run is the figure to compare."
    )
    return write_results("ingest", figures, "\n\n".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fast-turns", type=int, default=300, help="LoCoMo turns ingested in fast mode")
    parser.add_argument("--single-turns", type=int, default=40, help="turns built one at a time (remember)")
    parser.add_argument("--llm-turns", type=int, default=20, help="LoCoMo turns ingested in LLM mode")
    parser.add_argument("--quality-turns", type=int, default=50, help="turns for the construction quality count")
    parser.add_argument("--size-notes", type=int, default=2000, help="notes in the store-size measurement")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1 on a shared 2-core box)")
    args = parser.parse_args()

    config = load_config()
    config.llm.threads = args.threads
    conversations = locomo_turns(config)
    first, second = conversations["conv-26"], conversations["conv-30"]
    encoder = load_text_encoder(config)
    figures: dict[str, Any] = {
        "settings": {
            "llm_model": config.llm.model,
            "llm_threads": args.threads,
            "link_candidates": CONSTRUCTION.link_candidates,
            "construction_max_tokens": CONSTRUCTION.construction_max_tokens,
            "text_backend": encoder.backend,
        }
    }
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        fast_store = SqliteStore(directory / "fast.db")
        fast_builder = NoteBuilder(fast_store, encoder, config.memory)
        fast = ingest(fast_builder, fast_store, first[: args.fast_turns], "fast", batch=FAST_CHUNK)
        fast_store.checkpoint()
        fast["mb_per_1000_notes"] = store_bytes(directory / "fast.db") / fast["notes"] * 1000 / 1e6
        figures["locomo.fast"] = fast
        figures["locomo.fast_single"] = ingest(fast_builder, fast_store, first[: args.single_turns], "fast", batch=1)
        fast_store.close()
        figures["store.size"] = size_per_thousand(directory, first + second, args.size_notes)
        save(figures, args, config, encoder.backend, complete=False)

        llm = MeteredLLM(create_llm(config))
        llm_store = SqliteStore(directory / "llm.db")
        builder = NoteBuilder(llm_store, encoder, config.memory, llm)
        slow = ingest(builder, llm_store, first[: args.llm_turns], "llm")
        slow["llm"] = llm.totals()
        figures["locomo.llm"] = slow
        extra_turns = max(0, args.quality_turns - args.llm_turns)

        def record_quality(extra: Counter[str]) -> None:
            quality = Counter(slow["attributes"]) + extra
            figures["locomo.construction_quality"] = {
                "turns": sum(quality.values()),
                "parsed_first_time": quality.get("parsed", 0),
                "needed_retry": quality.get("retried", 0),
                "fell_back": quality.get("failed", 0),
                "share_parsed_first_time": quality.get("parsed", 0) / max(1, sum(quality.values())),
                "evolution_calls": slow["evolution"],
            }
            figures["llm.all_calls"] = llm.totals()
            save(figures, args, config, encoder.backend, complete=False)

        record_quality(Counter())
        extra = construction_quality(llm, second[:extra_turns], CONSTRUCTION.construction_max_tokens, record_quality)
        record_quality(Counter(extra))

    path = save(figures, args, config, encoder.backend, complete=True)
    print(path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
