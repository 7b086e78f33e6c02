"""Ingest throughput (notes/s) fast vs LLM construction, LLM tokens/s, store size per 1,000 notes, and
LLM construction quality (parsed first time / needed the retry / fell back) on LoCoMo turns.

.venv/bin/python -m bench.bench_ingest [--fast-turns 300] [--llm-turns 20] [--quality-turns 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles_ms, table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.llm import create_llm, prompts
from kiosk.llm.backend import LLM, Message, Usage
from kiosk.llm.structured import ask_structured
from kiosk.memory import Note, SqliteStore
from kiosk.memory.build import Draft, NoteAttributes, NoteBuilder, human_date
from kiosk.memory.ingest import Turn, conversation_turns, load_conversations
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


def ingest(builder: NoteBuilder, store: SqliteStore, turns: list[Turn], mode: str) -> dict[str, Any]:
    owner = store.add_user(f"{mode}-{turns[0].conversation}").id
    latencies: list[float] = []
    reports = []
    started = time.perf_counter()
    for turn in turns:
        t0 = time.perf_counter()
        draft = Draft(owner, turn.text, turn.timestamp, "face", turn.speaker, "import", turn.dia_id)
        reports.append(builder.build(draft, "llm" if mode == "llm" else "fast"))
        latencies.append(time.perf_counter() - t0)
        print(f"  {mode} {len(latencies)}/{len(turns)} {latencies[-1]:.2f}s", flush=True)
    total = time.perf_counter() - started
    return {
        "notes": len(turns),
        "seconds": total,
        "notes_per_s": len(turns) / total,
        "per_note": percentiles_ms(latencies),
        "attributes": dict(Counter(r.attributes for r in reports)),
        "evolution": dict(Counter(r.evolution for r in reports)),
        "links_per_note": float(np.mean([len(r.linked) for r in reports])),
        "evolved_neighbours": sum(len(r.evolved_neighbours) for r in reports),
        "examples": [r.note.as_dict() for r in reports[:3]],
    }


def size_per_thousand(directory: Path, turns: list[Turn], count: int) -> dict[str, float]:
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
            source_ref=turn.dia_id,
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


def construction_quality(llm: LLM, turns: list[Turn], max_tokens: int) -> dict[str, int]:
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
    return dict(outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fast-turns", type=int, default=300, help="LoCoMo turns ingested in fast mode")
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
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        fast_store = SqliteStore(directory / "fast.db")
        fast = ingest(NoteBuilder(fast_store, encoder, config.memory), fast_store, first[: args.fast_turns], "fast")
        fast_store.checkpoint()
        fast["mb_per_1000_notes"] = store_bytes(directory / "fast.db") / fast["notes"] * 1000 / 1e6
        fast_store.close()
        figures["locomo.fast"] = fast
        figures["store.size"] = size_per_thousand(directory, first + second, args.size_notes)

        llm = MeteredLLM(create_llm(config))
        llm_store = SqliteStore(directory / "llm.db")
        builder = NoteBuilder(llm_store, encoder, config.memory, llm)
        slow = ingest(builder, llm_store, first[: args.llm_turns], "llm")
        slow["llm"] = llm.totals()
        figures["locomo.llm"] = slow
        extra_turns = max(0, args.quality_turns - args.llm_turns)
        extra = construction_quality(llm, second[:extra_turns], config.memory.construction_max_tokens)
        quality = Counter(slow["attributes"]) + Counter(extra)
        figures["locomo.construction_quality"] = {
            "turns": sum(quality.values()),
            "parsed_first_time": quality.get("parsed", 0),
            "needed_retry": quality.get("retried", 0),
            "fell_back": quality.get("failed", 0),
            "share_parsed_first_time": quality.get("parsed", 0) / max(1, sum(quality.values())),
            "evolution_calls": slow["evolution"],
        }
        figures["llm.all_calls"] = llm.totals()
    figures["settings"] = {
        "llm_model": config.llm.model,
        "llm_threads": args.threads,
        "link_candidates": config.memory.link_candidates,
        "construction_max_tokens": config.memory.construction_max_tokens,
        "text_backend": encoder.backend,
    }

    q = figures["locomo.construction_quality"]
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
        [
            "llm",
            slow["notes"],
            round(slow["notes_per_s"], 3),
            round(slow["per_note"]["p50_ms"], 1),
            round(slow["per_note"]["p95_ms"], 1),
            round(slow["links_per_note"], 2),
            round(slow["llm"]["completion_tokens_per_s"], 2),
        ],
    ]
    size = figures["store.size"]
    body = "\n\n".join(
        [
            f"LoCoMo conv-26 turns in order, one owner, default config (LLM {config.llm.model}, "
            f"{args.threads} llama.cpp thread(s), text encoder on {encoder.backend}). Each note is its own "
            "committed transaction (WAL, synchronous=FULL).",
            table(["mode", "notes", "notes/s", "p50 ms/note", "p95 ms/note", "links/note", "LLM tokens/s"], rows),
            f"Speed-up fast over LLM: {fast['notes_per_s'] / slow['notes_per_s']:.0f}x. LLM tokens/s = completion "
            f"tokens / wall time of the LLM calls (prompt evaluation included): {slow['llm']['completion_tokens']} "
            f"completion + {slow['llm']['prompt_tokens']} prompt tokens in {slow['llm']['seconds']:.1f} s over "
            f"{slow['llm']['calls']} calls.",
            "Store size: "
            + table(
                ["measurement", "notes", "MB per 1,000 notes", "add_note p50 ms", "add_note p95 ms"],
                [
                    [
                        "fast import (real keywords/context/links)",
                        fast["notes"],
                        round(fast["mb_per_1000_notes"], 2),
                        "-",
                        "-",
                    ],
                    [
                        "direct add_note, real LoCoMo contents",
                        size["notes"],
                        round(size["mb_per_1000_notes"], 2),
                        round(size["add_note"]["p50_ms"], 2),
                        round(size["add_note"]["p95_ms"], 2),
                    ],
                ],
            ),
            f"LLM construction quality on {q['turns']} LoCoMo turns ({args.llm_turns} of conv-26 through the full "
            f"pipeline, {extra_turns} of conv-30 construction only), JSON-schema constrained decoding:",
            table(
                ["parsed first time", "needed the retry", "fell back (stored without attributes)"],
                [[q["parsed_first_time"], q["needed_retry"], q["fell_back"]]],
            ),
            f"Linking/evolution replies on the {args.llm_turns} full-pipeline turns: {json.dumps(slow['evolution'])} "
            f"('none' = no earlier note to link to); neighbours evolved: {slow['evolved_neighbours']}.",
            "Machine load: several other benchmark/test processes shared the 2 cores during this run; absolute "
            "LLM figures are pessimistic, the fast/LLM ratio is the figure to read.",
        ]
    )
    path = write_results("ingest", figures, body)
    print(path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
