"""Forgetting on or off: memory strength (decay with reinforcement) in the ranking, LLM-free evidence recall@10.

KIOSK_DATA=/work/shared/data PYTHONPATH=$PWD .venv/bin/python -m bench.bench_forgetting [--skip-locomo]

Household set (bench/data/household): each household is built at the terminal as `kiosk eval household` builds
it (palm identities, notes remembered by their authors through the product path), then REPLAYED in time order:
a note not yet said is archived (out of retrieval) and restored at the moment it was said (restoring sets its
last use to then, so it decays from when it was said, as a note said then would); each question is retrieved as
its asker, at its asked_at, as `Assistant.answer` retrieves (gate, pool, relevance floor, sensitive rule); then
the notes put in its prompt are reinforced at that moment, as `Assistant.answer` does after answering. So a note
is "used" when it was in the prompt of an earlier question (its asker's own notes, or a group / public note
someone else's question used: the kiosk keeps one strength per note). Each household's store is built once;
every setting gets a fresh assistant over it and replays from a clean state (no note used, none said yet).

Measures over answerable questions: evidence recall@10 (share of the evidence notes retrieved), MRR (1 / rank of
the best-ranked evidence note by ranking score; 0 when none is retrieved); `old evidence`: answerable questions
whose newest evidence note was said 14 days or more before asking (what decay could push out); `corrections`:
questions where an earlier evidence note holds one of the question's harmful phrases (the superseded day,
dose or code) and the newest evidence note holds none (the correction): `correction first` = share of them
whose correction ranks above every superseded note (a superseded note not retrieved counts as below).

The grid (half-life x weight) is chosen on the DEV households (best recall@10, then MRR, then correction first, then
the gentler setting: longer half-life, smaller weight); TEST households and LoCoMo report it. LoCoMo: `kiosk eval locomo
--retrieval-only` on all 1,300 held-out questions (outside the protocol's 10 % sample; palm probes, owner), every
question asked one day after the conversation's last session; LoCoMo questions carry no times of their own, so
LoCoMo measures decay alone (no reinforcement replay).
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.common import command_line, locomo_sample_keys, mean_evidence_recall, table, write_results
from kiosk.config import KioskConfig, load_config
from kiosk.eval.household_data import DEFAULT_DIR, Household, HouseQuestion, load_households
from kiosk.eval.household_store import Biometrics, HouseholdAtTerminal, household_at_terminal

HALF_LIVES = (7.0, 14.0, 30.0, 60.0, 180.0, 365.0)
WEIGHTS = (0.02, 0.05, 0.1, 0.2)
FLOORS = (0.05, 0.2)
SCALE = ((30.0, 0.1), (7.0, 0.2), (180.0, 0.05))
"""Stronger settings reported on the report data for scale (not chosen; 180 d / 0.05 is the older LoCoMo run's)."""
OLD_EVIDENCE_DAYS = 14


@dataclass(frozen=True)
class Setting:
    half_life_days: float
    weight: float
    archive_below: float = 0.0
    reinforce: bool = True

    @property
    def label(self) -> str:
        if self.weight == 0:
            return "off (weight 0)"
        text = f"h {self.half_life_days:g} d, w {self.weight:g}"
        text += f", archive < {self.archive_below:g}" if self.archive_below else ""
        return text + ("" if self.reinforce else ", no reinforcement")

    def config(self, base: KioskConfig) -> KioskConfig:
        config = base.model_copy(deep=True)
        config.forgetting.half_life_days = self.half_life_days
        config.forgetting.weight = self.weight
        config.forgetting.archive_below = self.archive_below
        return config


OFF = Setting(180.0, 0.0)


def _holds(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None


def superseded_notes(household: Household, question: HouseQuestion) -> list[str]:
    """Earlier evidence notes that hold a harmful phrase (the old day, dose or code), when the newest evidence
    note holds none: the question's answer was corrected, and these notes are what the correction replaced."""
    if len(question.evidence) < 2 or not question.harmful:
        return []
    evidence = [household.notes[e] for e in question.evidence]
    newest = max(evidence, key=lambda n: n.said_at)
    if any(_holds(newest.text, p) for p in question.harmful):
        return []
    return [
        note.id
        for note in evidence
        if note.said_at < newest.said_at and any(_holds(note.text, p) for p in question.harmful)
    ]


def replay(terminal: HouseholdAtTerminal, reinforce: bool) -> list[dict[str, Any]]:
    """Notes and questions in time order; one row per question (ranked note ids, best first)."""
    household, store, assistant = terminal.household, terminal.store, terminal.assistant
    stored = {name: note_id for note_id, name in terminal.note_ids.items()}
    start = min(min(n.said_at for n in household.notes.values()), min(q.asked_at for q in household.questions))
    store.archive_notes(list(stored.values()), start)
    events = [(n.said_at, 0, n.id) for n in household.notes.values() if n.id in stored]
    events += [(q.asked_at, 1, str(i)) for i, q in enumerate(household.questions)]
    rows = []
    for moment, kind, ref in sorted(events):
        if kind == 0:
            store.restore_note(stored[ref], moment)
            continue
        question = household.questions[int(ref)]
        terminal.ask_at(question.asked_at)
        _, retrieval, _ = assistant.retrieve(question.question, terminal.probes[question.asker])
        ranked = sorted(retrieval.notes, key=lambda item: -item.score)
        rows.append(
            {
                "question": question,
                "ranked": [terminal.note_ids.get(int(item.note.id or 0), "?") for item in ranked],
                "superseded": superseded_notes(household, question),
            }
        )
        if reinforce and not (retrieval.step_up is not None and not retrieval.notes):
            store.reinforce(retrieval.note_ids, assistant.clock())
    return rows


def scores(rows: list[dict[str, Any]], households: dict[str, Household]) -> dict[str, Any]:
    recall, rr, old, first = [], [], [], []
    for row in rows:
        question: HouseQuestion = row["question"]
        ranked: list[str] = row["ranked"]
        if not question.evidence:
            continue
        found = sum(1 for e in question.evidence if e in ranked) / len(question.evidence)
        ranks = [ranked.index(e) + 1 for e in question.evidence if e in ranked]
        recall.append(found)
        rr.append(1.0 / min(ranks) if ranks else 0.0)
        newest = max(households[row["household"]].notes[e].said_at for e in question.evidence)
        if (question.asked_at - newest).days >= OLD_EVIDENCE_DAYS:
            old.append(found)
        if row["superseded"]:
            notes = households[row["household"]].notes
            correction = max(question.evidence, key=lambda e: notes[e].said_at)
            rank = ranked.index(correction) if correction in ranked else None
            others = [ranked.index(s) for s in row["superseded"] if s in ranked]
            first.append(rank is not None and all(rank < other for other in others))
    return {
        "answerable": len(recall),
        "recall_at_10": _mean(recall),
        "mrr": _mean(rr),
        "old_evidence": len(old),
        "old_evidence_recall_at_10": _mean(old),
        "corrections": len(first),
        "correction_first": _mean([float(f) for f in first]),
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def household_scores(
    base: KioskConfig, settings: list[Setting], households: list[Household], biometrics: Biometrics, encoder: Any
) -> dict[Setting, dict[str, Any]]:
    """Each household built once; for every setting a fresh assistant over its store, replayed from a clean state
    (no note used, every note archived until it is said)."""
    from kiosk.app.build import build_assistant
    from kiosk.security.backoff import no_backoff

    rows: dict[Setting, list[dict[str, Any]]] = {setting: [] for setting in settings}
    for household in households:
        with household_at_terminal(base, household, biometrics, encoder, None) as terminal:
            for setting in settings:
                # Bench-only reset of what a replay writes (uses and their counts); archiving is redone by replay.
                terminal.store._conn.execute("UPDATE notes SET reinforcements = 0, last_used_at = NULL")
                config = setting.config(terminal.assistant.config)
                assistant = build_assistant(
                    config, terminal.store, encoder, thresholds=terminal.assistant.thresholds, backoff=no_backoff()
                )
                replayed = replay(replace(terminal, assistant=assistant), setting.reinforce)
                rows[setting] += [{**row, "household": household.id} for row in replayed]
    by_id = {h.id: h for h in households}
    return {setting: scores(found, by_id) for setting, found in rows.items()}


def locomo_recall(base: KioskConfig, setting: Setting) -> dict[str, Any]:
    from kiosk.eval.protocol import EvalOptions, run_locomo

    options = EvalOptions(
        modality="palm",
        ratio=1.0,
        held_out_from=0,
        answer=False,
        write=False,
        conditions=("owner",),
        command=command_line(),
    )
    answers = run_locomo(setting.config(base), options)["answers"]
    sample = locomo_sample_keys(base.paths.eval_data_dir)
    assert not any(answer["key"] in sample for answer in answers), "held-out draw must leave the sample out"
    return {"questions": len(answers), "recall_at_10": mean_evidence_recall(answers, "owner")}


def choose(grid: dict[Setting, dict[str, Any]]) -> Setting:
    """The best decay setting of the grid (OFF is the baseline, not a candidate)."""
    return max(
        (setting for setting in grid if setting.weight > 0),
        key=lambda s: (
            round(grid[s]["recall_at_10"], 6),
            round(grid[s]["mrr"], 6),
            round(grid[s]["correction_first"], 6),
            s.half_life_days,
            -s.weight,
        ),
    )


def decide(
    dev: dict[Setting, dict[str, Any]],
    test: dict[Setting, dict[str, Any]],
    locomo: dict[Setting, dict[str, Any]],
    chosen: Setting,
) -> tuple[bool, str]:
    """On by default only when better than off on dev (recall@10, then MRR) and no worse on test and LoCoMo."""

    def key(figures: dict[str, Any]) -> tuple[float, float]:
        return round(figures["recall_at_10"], 6), round(figures["mrr"], 6)

    better_on_dev = key(dev[chosen]) > key(dev[OFF])
    no_worse_on_test = key(test[chosen]) >= key(test[OFF])
    no_worse_on_locomo = not locomo or locomo[chosen]["recall_at_10"] >= locomo[OFF]["recall_at_10"]
    on = better_on_dev and no_worse_on_test and no_worse_on_locomo
    facts = (
        f"better than off on dev: {'yes' if better_on_dev else 'no'}; no worse on test: "
        f"{'yes' if no_worse_on_test else 'no'}; no worse on LoCoMo held-out: {'yes' if no_worse_on_locomo else 'no'}"
    )
    return on, f"**Decision: {'on by default' if on else 'left off (forgetting.weight stays 0)'}** ({facts})."


def _describe(households: list[Household]) -> str:
    """How many households and questions, and how long each household's notes and questions span (median)."""
    spans = sorted(
        (max(q.asked_at for q in h.questions) - min(n.said_at for n in h.notes.values())).days for h in households
    )
    questions = sum(len(h.questions) for h in households)
    return (
        f"{len(households)} households, {questions} questions; first note to last question "
        f"{spans[0]}-{spans[-1]} days, median {spans[len(spans) // 2]}"
    )


def _row(setting: Setting, figures: dict[str, Any]) -> list[Any]:
    return [
        setting.label,
        f"{figures['recall_at_10']:.3f}",
        f"{figures['mrr']:.3f}",
        f"{figures['old_evidence_recall_at_10']:.3f} ({figures['old_evidence']})",
        f"{figures['correction_first']:.3f} ({figures['corrections']})",
    ]


HEADERS = (
    "setting",
    "evidence recall@10",
    "MRR",
    f"old-evidence recall@10 (questions, newest evidence >= {OLD_EVIDENCE_DAYS} d old)",
    "corrections: correction ranked above superseded (questions)",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--skip-locomo", action="store_true")
    args = parser.parse_args()
    from kiosk.text import load_text_encoder

    base = load_config()
    encoder = load_text_encoder(base)
    biometrics = Biometrics.load(base, "palm")
    dev, test = load_households(args.data, "dev"), load_households(args.data, "test")

    candidates = [Setting(half_life, weight) for half_life in HALF_LIVES for weight in WEIGHTS]
    grid = household_scores(base, [OFF, *candidates], dev, biometrics, encoder)
    chosen = choose(grid)
    scale = [Setting(h, w) for h, w in SCALE if Setting(h, w) != chosen]
    variants = [
        *(Setting(s.half_life_days, s.weight, reinforce=False) for s in (chosen, *scale)),
        *(Setting(chosen.half_life_days, chosen.weight, archive_below=floor) for floor in FLOORS),
    ]
    grid |= household_scores(base, variants, dev, biometrics, encoder)
    on_test = household_scores(base, [OFF, chosen, *scale, *variants], test, biometrics, encoder)
    on_locomo = {} if args.skip_locomo else {s: locomo_recall(base, s) for s in (OFF, chosen, *scale)}
    verdict = decide(grid, on_test, on_locomo, chosen)

    figures: dict[str, Any] = {
        "chosen": {"half_life_days": chosen.half_life_days, "weight": chosen.weight},
        "turn_on_by_default": verdict[0],
        "household.dev": {s.label: f for s, f in grid.items()},
        "household.test": {s.label: f for s, f in on_test.items()},
        "locomo.held_out": {s.label: f for s, f in on_locomo.items()},
        "load_average_at_end": os.getloadavg(),
    }
    body = [
        f"Chosen on the dev households: **{chosen.label}** "
        "(best recall@10, then MRR, then correction first, then gentler). " + verdict[1],
        f"Machine shared with other jobs (load average {os.getloadavg()[0]:.1f} on 2 cores at the end); the "
        "figures are counts, not timings, so the load does not change them.",
        f"## Household DEV ({_describe(dev)}): the grid, where the setting is chosen",
        table(HEADERS, [_row(s, f) for s, f in grid.items()]),
        f"## Household TEST ({_describe(test)}): no decision touched them",
        table(HEADERS, [_row(s, f) for s, f in on_test.items()]),
    ]
    if on_locomo:
        body += [
            "## LoCoMo held-out (owner, palm, LLM-free; decay only: LoCoMo questions carry no times)",
            table(
                ("setting", "questions", "owner evidence recall@10"),
                [[s.label, f["questions"], f"{f['recall_at_10']:.4f}"] for s, f in on_locomo.items()],
            ),
        ]
    body.append(__doc__.split("\n\n", 2)[2])
    path = write_results("forgetting", figures, "\n\n".join(body))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
