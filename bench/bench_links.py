"""Links at retrieval: owner evidence recall@10 and retrieval latency of the kiosk's default retrieval (familiarity
fused with BM25, dates and people, relevance floor, sensitive rule), without and with linked notes (A-Mem's
linked memories) taking the place of the weakest of the top K. LLM-free. The rule lives here, not in kiosk/: it
measured worse on the report data (bench/results/links.md).

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD nice -n 10 .venv/bin/python -m bench.bench_links

LoCoMo: the protocol's fast-construction store (`kiosk eval locomo` builds and caches it; its links are the
"similar" links of fast construction), one user per conversation enrolled with a synthetic face template, each
question asked through `Assistant.retrieve` by its owner's probe. Rules are tuned on the evaluation's 10 % sample
(seed 0) and reported on the questions outside it (held out). Household set (bench/data/household): each
household built through the product path (kiosk.eval.household_store), each question with evidence asked by its
asker at its moment; rules tuned on split dev, reported on split test. The rule chosen maximises the mean of the
two tuning sets' all-question recall@10; every variant of a question runs back to back (paired latency).

The rule: once the top K are chosen, the links of the best-ranked `sources` of them lead to notes admitted only
from the query's pool matrix (Retriever.pool: the active notes of the owners the gate opened) and never when the
query excludes them (sensitive notes it is not cleared for), so a link stored by mistake across owners, or to an
archived note, leads nowhere. Closest to the question first, such a note takes the place of the lowest-ranked
chosen note when its cosine beats that note's by the margin, at most `replace` times.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import locomo_sample_keys, table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.identity.probe import Probe
from kiosk.memory.note import Note
from kiosk.retrieval.pool_matrix import PoolMatrix
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.retriever import Retriever
from kiosk.security.backoff import no_backoff

SHA = "bench-synthetic-face-encoder"
FACE_DIM = 512
TAU = 0.5
CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}
BASELINE = "familiarity"


@dataclass(frozen=True)
class LinkRule:
    """Which links are followed and when a linked note displaces a chosen one."""

    sources: int = 10
    """The best-ranked chosen notes whose links are followed."""
    replace: int = 2
    """At most this many chosen notes (the lowest-ranked first) give their place to linked notes."""
    margin: float = 0.0
    """A linked note's cosine to the question must beat the displaced note's by at least this."""


def admitted_links(
    chosen: Sequence[ScoredNote], pool: PoolMatrix, query: np.ndarray, excluded: Set[int], sources: int
) -> list[tuple[int, float]]:
    """(note id, cosine to the question) of the notes linked to the `sources` best chosen notes that the pool
    holds and the query may use, closest first (ties by id); chosen notes are not repeated."""
    ranked = sorted(chosen, key=lambda item: (-item.score, int(item.note.id or 0)))
    taken = {int(item.note.id or 0) for item in chosen}
    linked = {link.target_id for item in ranked[:sources] for link in item.note.links} - taken - set(excluded)
    if not linked or len(pool) == 0:
        return []
    rows = np.flatnonzero(np.isin(pool.ids, np.fromiter(linked, np.int64, len(linked))))
    sims = pool.embeddings[rows].astype(np.float64) @ np.asarray(query, dtype=np.float64)
    norm = float(np.linalg.norm(query))
    pairs = [
        (int(pool.ids[row]), float(sim) / (norm if norm > 0 else 1.0)) for row, sim in zip(rows, sims, strict=True)
    ]
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))


def with_linked(
    chosen: Sequence[ScoredNote],
    pool: PoolMatrix,
    query: np.ndarray,
    excluded: Set[int],
    k: int,
    rule: LinkRule,
    read: Callable[[Sequence[int]], list[Note]],
) -> list[ScoredNote]:
    """`chosen` with admitted linked notes, closest first, joining free places (fewer than k chosen) and then
    replacing the lowest-ranked chosen notes, each only when its cosine beats the displaced note's by the margin.
    A joining note takes the rank score of the note it displaces (or of the lowest-ranked one)."""
    candidates = admitted_links(chosen, pool, query, excluded, rule.sources)
    if not candidates:
        return list(chosen)
    ranked = sorted(chosen, key=lambda item: (-item.score, int(item.note.id or 0)))
    kept = list(ranked)
    moves: list[tuple[int, float, ScoredNote | None]] = []  # (linked id, its cosine, the chosen note it displaces)
    for note_id, similarity in candidates:
        if len(kept) + len(moves) < k:  # a free place: nothing is displaced, so no bar
            moves.append((note_id, similarity, None))
            continue
        displaced = sum(1 for *_, victim in moves if victim is not None)
        if displaced >= rule.replace or not kept or similarity < kept[-1].similarity + rule.margin:
            break
        moves.append((note_id, similarity, kept.pop()))
    if not moves:
        return list(chosen)
    owners = {int(owner) for owner in pool.owners}
    read_back = {int(note.id or 0): note for note in read([note_id for note_id, _, _ in moves])}
    result = list(kept)
    for note_id, similarity, victim in moves:
        note = read_back.get(note_id)
        if note is not None and note.owner_id in owners:
            result.append(ScoredNote(note, similarity, victim.score if victim is not None else ranked[-1].score))
        elif victim is not None:  # gone since the pool was read: the displaced note keeps its place
            result.append(victim)
    return result


class LinkedRetriever(Retriever):
    """The kiosk's retriever, then linked notes by `rule` (None: the retriever alone); records each call's time."""

    def __init__(self, base: Retriever, rule: LinkRule | None) -> None:
        super().__init__(base.store, base.config, base.scopes_config, base.forgetting_config, base.tuning)
        self.rule = rule
        self.last_ms = 0.0

    def retrieve(
        self,
        owner_ids: Sequence[int],
        query: np.ndarray,
        query_text: str,
        *,
        k: int | None = None,
        exclude: Set[int] = frozenset(),
        **options: Any,
    ) -> Retrieval:
        started = time.perf_counter()
        result = super().retrieve(owner_ids, query, query_text, k=k, exclude=exclude, **options)
        if self.rule is not None and result.notes:
            pool = self.pool(tuple(sorted(set(int(o) for o in owner_ids))))
            linked = with_linked(
                result.notes, pool, query, exclude, k or self.config.k, self.rule, self.store.get_notes
            )
            result = replace(result, notes=sorted(linked, key=lambda i: (i.note.timestamp, int(i.note.id or 0))))
        self.last_ms = (time.perf_counter() - started) * 1000.0
        return result


def rule_label(rule: LinkRule | None) -> str:
    if rule is None:
        return BASELINE
    return f"+links (top {rule.sources}, ≤{rule.replace} replaced, margin {rule.margin:g})"


@dataclass
class Scores:
    """Per variant: evidence recall of each question (by group), the retrieval times, and how many questions got
    other notes than the baseline; with the links stored in the store(s) searched."""

    recall: dict[str, dict[str, list[float]]]
    ms: dict[str, list[float]]
    changed: dict[str, int]
    links: int = 0

    @classmethod
    def empty(cls, labels: Sequence[str]) -> Scores:
        return cls({label: {} for label in labels}, {label: [] for label in labels}, dict.fromkeys(labels, 0))

    def add_runs(self, runs: dict[str, Any], groups: Sequence[str], recall: Callable[[Retrieval], float]) -> None:
        """One question's runs (label -> (retrieval, ms)) scored by `recall`."""
        baseline = set(runs[BASELINE][0].note_ids)
        for label, (retrieval, ms) in runs.items():
            for group in groups:
                self.recall[label].setdefault(group, []).append(recall(retrieval))
            self.ms[label].append(ms)
            self.changed[label] += set(retrieval.note_ids) != baseline

    def mean(self, label: str, group: str) -> float:
        values = self.recall[label].get(group, [])
        return float(np.mean(values)) if values else float("nan")

    def p50(self, label: str) -> float:
        return statistics.median(self.ms[label]) if self.ms[label] else float("nan")


def run_variants(assistant: Any, variants: dict[str, LinkedRetriever], question: str, probe: Probe) -> dict[str, Any]:
    """Each variant's retrieval of the question, back to back: label -> (retrieval, ms)."""
    out = {}
    for label, retriever in variants.items():
        assistant.retriever = retriever
        _, retrieval, _ = assistant.retrieve(question, probe, record=False)
        out[label] = (retrieval, retriever.last_ms)
    return out


def stored_links(store: Any) -> int:
    """Directed links in a SQLite store (each link is stored both ways)."""
    row = store._conn.execute("SELECT count(*) FROM links").fetchone()
    return int(row[0]) if row else 0


# ---- LoCoMo ------------------------------------------------------------------------------------


def locomo_store(config: KioskConfig) -> Path:
    from kiosk.eval.locomo import conversations_digest, load_conversations, locomo_path
    from kiosk.eval.protocol import EvalOptions
    from kiosk.eval.store import cached_store_path, store_key

    source = locomo_path(config.paths.eval_data_dir)
    options = EvalOptions(modality="palm")
    key = store_key(config, conversations_digest(load_conversations(source), source), "fast", None, None)
    path = cached_store_path(options.cache_dir, key)
    if not path.is_file():
        raise SystemExit(f"no cached LoCoMo store at {path}: run `kiosk eval locomo --retrieval-only` once first")
    return path


def locomo(
    config: KioskConfig, rules: dict[str, LinkRule | None], split: str, limit: int | None = None
) -> tuple[Scores, int]:
    """Recall@10 per variant on LoCoMo questions of `split` ('sample': tuning, 'held_out': report)."""
    from kiosk.app.build import build_assistant
    from kiosk.eval.locomo import load_conversations, locomo_path, select_questions
    from kiosk.memory.sqlite_store import SqliteStore
    from kiosk.text import load_text_encoder

    data_dir = config.paths.eval_data_dir
    conversations = load_conversations(locomo_path(data_dir))
    sample = locomo_sample_keys(data_dir)
    questions = [
        q
        for q in select_questions(conversations, 1.0, 0)
        if q.evidence and q.category in CATEGORIES and (q.key in sample) == (split == "sample")
    ][:limit]
    encoder = load_text_encoder(config)
    work = Path(tempfile.mkdtemp(prefix="bench-links-"))
    shutil.copyfile(locomo_store(config), work / "store.db")
    store = SqliteStore(work / "store.db")
    rng = np.random.default_rng(7)
    scores = Scores.empty(list(rules))
    scores.links = stored_links(store)
    try:
        users = {user.name: user for user in store.list_users()}
        identity = {}
        for name in sorted(users):
            vector = rng.standard_normal(FACE_DIM)
            identity[name] = vector / np.linalg.norm(vector)
            store.set_templates(users[name].id, "face", identity[name][None, :].astype(np.float32), SHA)
        assistant = build_assistant(config, store, encoder, thresholds={"face": TAU}, backoff=no_backoff())
        variants = {label: LinkedRetriever(assistant.retriever, rule) for label, rule in rules.items()}
        for done, question in enumerate(questions, 1):
            noisy = identity[question.conversation_id] + 0.15 * rng.standard_normal(FACE_DIM) / np.sqrt(FACE_DIM)
            probe = Probe("face", (noisy / np.linalg.norm(noisy)).astype(np.float32), SHA, captured_at=0.0)
            evidence = set(question.evidence)
            owner = users[question.conversation_id].id
            runs = run_variants(assistant, variants, question.question, probe)

            def recall(retrieval: Retrieval, owner: int = owner, evidence: set[str] = evidence) -> float:
                assert {item.note.owner_id for item in retrieval.notes} <= {owner}, "another owner's note"
                return len(evidence & {item.note.source_ref for item in retrieval.notes}) / len(evidence)

            scores.add_runs(runs, [CATEGORIES[question.category], "all"], recall)
            if done % 200 == 0:
                print(f"  locomo {split} {done}/{len(questions)}", flush=True)
    finally:
        store.close()
        shutil.rmtree(work, ignore_errors=True)
    return scores, len(questions)


# ---- household -----------------------------------------------------------------------------------


def household(config: KioskConfig, rules: dict[str, LinkRule | None], split: str) -> tuple[Scores, int, int]:
    """Recall@10 per variant on the household questions with evidence of `split`; also the foreign notes any
    variant put in an asker's context (must be 0)."""
    from kiosk.eval.household import in_time_order
    from kiosk.eval.household_data import load_households
    from kiosk.eval.household_store import Biometrics, household_at_terminal
    from kiosk.retrieval.pool import validate_query
    from kiosk.text import load_text_encoder

    encoder = load_text_encoder(config)
    biometrics = Biometrics.load(config, "palm")
    scores = Scores.empty(list(rules))
    asked = foreign = 0
    for house in load_households(split=split):
        with household_at_terminal(config, house, biometrics, encoder, None, notes_up_front=False) as terminal:
            variants = {label: LinkedRetriever(terminal.assistant.retriever, rule) for label, rule in rules.items()}
            for question in in_time_order(house.questions):
                terminal.remember_until(question.asked_at)  # never a note said after the question
                if not question.evidence:
                    continue
                asked += 1
                terminal.ask_at(question.asked_at)
                text = validate_query(question.question)
                groups = ["multi-evidence" if len(question.evidence) > 1 else "one-evidence", "all"]
                runs = run_variants(terminal.assistant, variants, text, terminal.probes[question.asker])
                for retrieval, _ in runs.values():
                    got = [terminal.note_ids.get(int(item.note.id or 0), "?") for item in retrieval.notes]
                    foreign += sum(
                        1
                        for note_id in got
                        if note_id not in house.notes
                        or not house.notes[note_id].readable_by(question.asker, house.groups)
                    )

                def recall(retrieval: Retrieval, wanted: tuple[str, ...] = question.evidence) -> float:
                    got = {terminal.note_ids.get(int(item.note.id or 0), "?") for item in retrieval.notes}
                    return sum(1 for note_id in wanted if note_id in got) / len(wanted)

                scores.add_runs(runs, groups, recall)
            terminal.remember_until()
            scores.links += stored_links(terminal.store)
    return scores, asked, foreign


# ---- report --------------------------------------------------------------------------------------

LOCOMO_GROUPS = ("multi-hop", "temporal", "single-hop", "all")
HOUSE_GROUPS = ("multi-evidence", "one-evidence", "all")


def rows(scores: Scores, groups: Sequence[str]) -> list[list[Any]]:
    out = []
    for label in scores.recall:
        p50 = scores.p50(label)
        added = p50 - scores.p50(BASELINE)
        out.append(
            [
                label,
                *(f"{scores.mean(label, group):.3f}" for group in groups),
                f"{p50:.2f}",
                f"{added:+.2f}" if label != BASELINE else "",
                f"{scores.changed[label]} / {len(scores.ms[label])}" if label != BASELINE else "",
            ]
        )
    return out


def grid(sources: Sequence[int], replaces: Sequence[int], margins: Sequence[float]) -> dict[str, LinkRule | None]:
    rules: dict[str, LinkRule | None] = {BASELINE: None}
    for s, r, m in itertools.product(sources, replaces, margins):
        rule = LinkRule(sources=s, replace=r, margin=m)
        rules[rule_label(rule)] = rule
    return rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", default="3,10", help="top notes whose links are followed")
    parser.add_argument("--replace", default="1,2,3,5", help="most chosen notes a linked note may displace")
    parser.add_argument("--margins", default="0,0.05", help="cosine a linked note must beat the displaced one by")
    parser.add_argument(
        "--also-report", type=int, default=3, help="next-best tuning rules also run on the report data (robustness)"
    )
    args = parser.parse_args()
    config = load_config()
    rules = grid(
        [int(v) for v in args.sources.split(",")],
        [int(v) for v in args.replace.split(",")],
        [float(v) for v in args.margins.split(",")],
    )
    started = datetime.now(UTC)
    print("tuning: LoCoMo sample, household dev", flush=True)
    tune_locomo, n_sample = locomo(config, rules, "sample")
    tune_house, n_dev, foreign_dev = household(config, rules, "dev")
    gains = {
        label: (tune_locomo.mean(label, "all") - tune_locomo.mean(BASELINE, "all"))
        + (tune_house.mean(label, "all") - tune_house.mean(BASELINE, "all"))
        for label in rules
        if label != BASELINE
    }
    by_gain = sorted(gains, key=lambda label: (-gains[label], label))
    chosen = by_gain[0]
    report_rules = {label: rules[label] for label in (BASELINE, *by_gain[: 1 + args.also_report])}
    print(f"chosen on tuning data: {chosen} (mean gain {gains[chosen] / 2:+.4f})", flush=True)
    print("report: LoCoMo held out, household test (the choice already made)", flush=True)
    report_locomo, n_held = locomo(config, report_rules, "held_out")
    report_house, n_test, foreign_test = household(config, report_rules, "test")
    delta = {
        name: scores.mean(chosen, "all") - scores.mean(BASELINE, "all")
        for name, scores in (("LoCoMo held out", report_locomo), ("household test", report_house))
    }
    verdict = ", ".join(f"{name} {value:+.3f}" for name, value in delta.items())
    better = all(value >= 0 for value in delta.values()) and any(value > 0 for value in delta.values())

    figures: dict[str, Any] = {"chosen_rule": chosen, "tuning_gain_mean_all_recall_at_10": gains[chosen] / 2}
    for name, scores, groups in (
        ("locomo.sample", tune_locomo, LOCOMO_GROUPS),
        ("household.dev", tune_house, HOUSE_GROUPS),
        ("locomo.held_out", report_locomo, LOCOMO_GROUPS),
        ("household.test", report_house, HOUSE_GROUPS),
    ):
        for label in scores.recall:
            key = f"{name}.{label}"
            figures[key] = {f"{g}.recall_at_10": scores.mean(label, g) for g in groups} | {"p50_ms": scores.p50(label)}
    figures["household.foreign_notes"] = {"dev": foreign_dev, "test": foreign_test}
    figures["links_stored"] = {"locomo": report_locomo.links, "household.dev": tune_house.links}
    figures["household.test.links_stored"] = report_house.links
    figures["chosen.better_on_report_data"] = better

    def block(title: str, scores: Scores, groups: Sequence[str], names: Sequence[str]) -> str:
        headers = [
            "retrieval",
            *(f"{n} R@10" for n in names),
            "p50 ms per retrieval",
            "p50 ms added",
            "questions with other notes",
        ]
        return f"### {title}\n\n" + table(headers, rows(scores, groups))

    summary_headers = [
        "retrieval",
        "LoCoMo held-out multi-hop R@10",
        "LoCoMo held-out all R@10",
        "LoCoMo p50 ms",
        "household test ≥2-evidence R@10",
        "household test all R@10",
        "household p50 ms",
    ]
    summary = [
        [
            label,
            f"{report_locomo.mean(label, 'multi-hop'):.3f}",
            f"{report_locomo.mean(label, 'all'):.3f}",
            f"{report_locomo.p50(label):.2f}",
            f"{report_house.mean(label, 'multi-evidence'):.3f}",
            f"{report_house.mean(label, 'all'):.3f}",
            f"{report_house.p50(label):.2f}",
        ]
        for label in (BASELINE, chosen)
    ]
    locomo_names = [f"LoCoMo {g}" for g in LOCOMO_GROUPS]
    house_names = ["household ≥2-evidence", "household 1-evidence", "household all"]
    body = "\n\n".join(
        [
            " ".join(
                [
                    f"Started {started:%Y-%m-%d %H:%M} UTC, load average at the end {os.getloadavg()[0]:.2f}",
                    "(machine shared with other engineers' jobs: compare variants within this run).",
                    "LLM-free owner evidence recall@10 (share of a question's evidence notes among the 10 it",
                    "retrieves, averaged) of the kiosk's default retrieval path (Assistant.retrieve: gate, fused",
                    "familiarity, relevance floor, sensitive rule), alone ('familiarity') and followed by linked",
                    "notes (bench/bench_links.py): the links of the best `top` chosen notes lead to notes of",
                    "the same pool (the gate's owners, active, not withheld) which replace the lowest-ranked chosen",
                    "notes, at most `replaced` of them, each only if its cosine to the question beats the displaced",
                    "note's by the margin. p50 ms: one retrieval call (retriever + links), every variant of a",
                    "question run back to back.",
                    f"LoCoMo: fast-construction store ({report_locomo.links} directed 'similar' links over its",
                    f"notes), {n_sample} sample questions (tuning), {n_held} held-out questions (report),",
                    "synthetic face probes. Household: each household built through the product path",
                    f"({tune_house.links} directed links in the dev stores, {report_house.links} in the test",
                    f"ones), {n_dev} dev questions with evidence (tuning), {n_test} test questions (report),",
                    "Tongji palm probes; no reinforcement between questions. Rule chosen on the tuning data",
                    f"(mean gain of all-question R@10 over the two sets): **{chosen}**. On the report data its",
                    f"all-question R@10 moved by {verdict}:",
                    "**better, the kiosk's default**." if better else "**not better: kept out of kiosk/**.",
                    f"The {args.also_report} next-best tuning rules are shown on the report data too, for",
                    "robustness only (not used to choose).",
                    "Questions with other notes: how many questions got a different set of 10 notes than",
                    f"'familiarity'. Notes of another reader in an asker's context, any variant: dev {foreign_dev},",
                    f"test {foreign_test}; LoCoMo asserts every retrieved note is the asker's own.",
                ]
            ),
            "## Report data (no decision touched it)\n\n" + table(summary_headers, summary),
            "## Report data, every group\n\n"
            + block("LoCoMo held out", report_locomo, LOCOMO_GROUPS, locomo_names)
            + "\n\n"
            + block("household test", report_house, HOUSE_GROUPS, house_names),
            "## Tuning data (every rule)\n\n"
            + block("LoCoMo 10 % sample", tune_locomo, LOCOMO_GROUPS, locomo_names)
            + "\n\n"
            + block("household dev", tune_house, HOUSE_GROUPS, house_names),
        ]
    )
    write_results("links", figures, body)


if __name__ == "__main__":
    main()
