"""Sensitive-note classification: precision / recall of the rules per class on the hand-written household notes
(bench/sensitive_household.py, per split), and of rules-only, LLM-only and rules+LLM on the 200 hand-labelled
LoCoMo turns (bench/labels/sensitive_locomo200.csv; how they were made: bench/labels/README.md).

.venv/bin/python -m bench.bench_sensitive [--model qwen2.5-coder-0.5b-instruct] [--threads 2] [--limit 200]
.venv/bin/python -m bench.bench_sensitive --household   (household figures only; LoCoMo's kept from the last run)
.venv/bin/python -m bench.bench_sensitive --rules-heldout   (rules' precision on turns outside the sample)

"sensitive" is binary (any category vs none); category accuracy counts a true positive only when the
predicted category equals the label. The LLM's verdicts are cached per (model, prompt, turn) under
bench/cache/ so a re-run only times what is new; latency figures come from the calls made in this run.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import RESULTS, command_line, percentiles_ms, table, write_results
from bench.sensitive_household import household_section
from bench.sensitive_llm import CLASSIFY_SCHEMA, CLASSIFY_SYSTEM, classify_llm
from bench.sensitive_sample import load_turns
from kiosk.calibration.schema import Rate
from kiosk.calibration.sensitive import SensitiveCalibration, sensitive_path
from kiosk.config import PROJECT_ROOT, load_config
from kiosk.llm import create_llm
from kiosk.memory.sensitivity import classify_rules
from kiosk.models import ModelStore

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels" / "sensitive_locomo200.csv"
HELDOUT = HERE / "labels" / "sensitive_rules_heldout.csv"
CACHE = HERE / "cache" / "sensitive_llm.json"
THRESHOLD_LINK = (
    "How it was chosen, the trade-off per target FAR and the face-video checks: "
    "[sensitive_threshold.md](sensitive_threshold.md)."
)
GOAL_FRR = 0.05
LOCOMO_HEADING = "## LoCoMo: 200 hand-labelled turns"


def _frr(rate: Rate) -> str:
    return f"{100 * rate.value:.2f} % ({rate.errors}/{rate.trials:,})"


def _far(rate: Rate) -> str:
    return f"{rate.value:.1e} ({rate.errors}/{rate.trials:,})"


def threshold_section(calibration_dir: Path = PROJECT_ROOT / "calibration") -> tuple[dict[str, float], str]:
    """The shipped sensitive thresholds (calibration/sensitive-*.json): FRR and FAR of fused probes per frame count,
    read from the files the kiosk uses."""
    figures: dict[str, float] = {}
    rows: list[list[str]] = []
    for modality in ("face", "palm"):
        path = sensitive_path(calibration_dir, modality)
        if not path.exists():
            continue
        shipped = SensitiveCalibration.model_validate_json(path.read_text(encoding="utf-8"))
        dataset = shipped.dataset.split(" (")[0]
        for point in shipped.trade_off:
            live = " (live fusion)" if point.frames == shipped.frames_fused else ""
            rows.append(
                [
                    f"{modality}, {dataset}",
                    f"{shipped.threshold:.4f}",
                    f"{point.frames}{live}",
                    _frr(point.frr),
                    "met" if point.frr.value <= GOAL_FRR else "not met",
                    _far(point.far),
                ]
            )
            key = f"{modality}.{dataset.lower()}.fused_{point.frames}"
            figures[f"{key}.frr"], figures[f"{key}.far"] = point.frr.value, point.far.value
    header = ["modality, data set", "shipped threshold", "frames fused", "FRR (owner withheld)", "goal FRR <= 5 %"]
    markdown = "\n\n".join(
        [
            "## Sensitive threshold: fused probes",
            "From the shipped calibration/sensitive-*.json (target FAR 1e-5; the threshold was chosen and is "
            "measured on the same data set, so these are tuned figures). " + THRESHOLD_LINK,
            table([*header, "FAR (impostor trials)"], rows),
        ]
    )
    return figures, markdown


def write_sensitive(locomo_figures: dict[str, Any], locomo_markdown: str) -> Path:
    """sensitive.md and .json: the threshold and household sections (computed now) and the LoCoMo one given."""
    threshold_figures, threshold_markdown = threshold_section()
    household_figures, household_markdown = household_section()
    body = f"{threshold_markdown}\n\n{household_markdown}\n\n{LOCOMO_HEADING}\n\n{locomo_markdown}"
    figures = {**threshold_figures, **household_figures, **locomo_figures}
    return write_results("sensitive", figures, body, extra={"locomo_markdown": locomo_markdown})


def refresh_household() -> Path:
    """Household figures anew; the LoCoMo figures and text of the last full run kept as they were."""
    saved = RESULTS / "sensitive.json"
    previous = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {"figures": {}}
    locomo_figures = {k: v for k, v in previous["figures"].items() if k.startswith("locomo200.")}
    locomo_markdown = previous.get("locomo_markdown")
    if locomo_markdown is None:  # from the markdown alone
        text = (RESULTS / "sensitive.md").read_text(encoding="utf-8")
        if LOCOMO_HEADING in text:
            locomo_markdown = text.split(LOCOMO_HEADING, 1)[1].strip()
        else:  # written before the household section: the whole body is LoCoMo's, the header its provenance
            made = re.search(r"^Made by (`[^`]+`) on (\S+) ", text, re.MULTILINE)
            provenance = f"Made by {made.group(1)} on {made.group(2)}." if made else "Made by an earlier run."
            locomo_markdown = provenance + "\n\n" + text.split("\n\n", 2)[2].strip()
    return write_sensitive(locomo_figures, locomo_markdown)


def load_labels(path: Path = LABELS) -> dict[str, str]:
    with path.open(encoding="utf-8") as handle:
        return {row["key"]: row["label"] for row in csv.DictReader(handle)}


def scores(labels: Mapping[str, str], predicted: Mapping[str, str]) -> dict[str, float]:
    tp = sum(1 for k, y in labels.items() if y != "none" and predicted[k] != "none")
    fp = sum(1 for k, y in labels.items() if y == "none" and predicted[k] != "none")
    fn = sum(1 for k, y in labels.items() if y != "none" and predicted[k] == "none")
    exact = sum(1 for k, y in labels.items() if y != "none" and predicted[k] == y)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "category_recall": exact / (tp + fn) if tp + fn else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=200, help="label rows to run the LLM on (all by default)")
    parser.add_argument("--rules-heldout", action="store_true", help="only the rules' held-out precision (no LLM)")
    parser.add_argument("--household", action="store_true", help="household figures only (LoCoMo's kept)")
    args = parser.parse_args()
    if args.household:
        print(f"wrote {refresh_household()}")
        return
    config = load_config(environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    if args.rules_heldout:
        rules_heldout(config.paths.eval_data_dir / "locomo" / "locomo10.json")
        return
    config.llm.model = args.model
    config.llm.threads = args.threads
    labels = dict(list(load_labels().items())[: args.limit])
    turns = {t.key: t for t in load_turns(config.paths.eval_data_dir / "locomo" / "locomo10.json")}
    missing = [k for k in labels if k not in turns]
    if missing:
        raise SystemExit(f"labelled turns not in the data: {missing[:3]}")
    rules = {k: classify_rules(turns[k].text) or "none" for k in labels}

    prompt_id = hashlib.sha256((CLASSIFY_SYSTEM + json.dumps(CLASSIFY_SCHEMA)).encode()).hexdigest()[:12]
    cache: dict[str, Any] = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    timing_key = f"{args.model}|{prompt_id}|seconds"
    llm: Any = None
    seconds: list[float] = []
    failed = 0
    verdicts: dict[str, str] = {}
    try:
        for index, key in enumerate(labels):
            cache_key = f"{args.model}|{prompt_id}|{key}"
            if cache_key not in cache:
                if llm is None:
                    llm = create_llm(config, ModelStore(config.paths.models))
                started = time.perf_counter()
                verdict = classify_llm(llm, turns[key].text)
                seconds.append(time.perf_counter() - started)
                cache[cache_key] = verdict or "failed"
                if len(seconds) % 5 == 0:
                    CACHE.parent.mkdir(parents=True, exist_ok=True)
                    CACHE.write_text(json.dumps(cache, indent=0))
                    print(f"  {index}/{len(labels)} llm verdicts, last call {seconds[-1]:.1f} s", flush=True)
            verdict = cache[cache_key]
            failed += verdict == "failed"
            verdicts[key] = "none" if verdict == "failed" else verdict
    finally:
        if seconds:
            cache[timing_key] = seconds
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cache, indent=0))
        if llm is not None:
            llm.close()
    combined = {k: rules[k] if rules[k] != "none" else verdicts[k] for k in labels}

    figures: dict[str, Any] = {"locomo200.turns": len(labels), "locomo200.positives": Counter(labels.values())}
    rows = []
    for name, predicted in (("rules", rules), ("llm only", verdicts), ("rules+llm", combined)):
        result = scores(labels, predicted)
        slug = name.replace(" ", "_").replace("+", "_")
        for metric, value in result.items():
            figures[f"locomo200.{slug}.{metric}"] = value
        rows.append(
            [
                name,
                result["precision"],
                result["recall"],
                result["f1"],
                result["category_recall"],
                f"{result['tp']}/{result['fp']}/{result['fn']}",
            ]
        )
    figures["locomo200.llm.failed_replies"] = failed
    timed_now = bool(seconds)
    seconds = seconds or list(cache.get(timing_key, []))
    if seconds:
        figures["locomo200.llm.call"] = percentiles_ms(seconds)
    stratum = {"screened": list(labels)[:100], "random": list(labels)[100:]}
    strata_rows = []
    for stratum_name, keys in stratum.items():
        sub = {k: labels[k] for k in keys}
        if not sub:
            continue
        for name, predicted in (("rules", rules), ("rules+llm", combined)):
            result = scores(sub, predicted)
            figures[f"locomo200.{stratum_name}.{name.replace('+', '_')}.precision"] = result["precision"]
            figures[f"locomo200.{stratum_name}.{name.replace('+', '_')}.recall"] = result["recall"]
            strata_rows.append(
                [
                    stratum_name,
                    name,
                    result["precision"],
                    result["recall"],
                    f"{result['tp']}/{result['fp']}/{result['fn']}",
                ]
            )
    llm_confusion = Counter((labels[k], verdicts[k]) for k in labels)
    figures["locomo200.llm.confusion"] = {f"{y}->{p}": n for (y, p), n in sorted(llm_confusion.items())}
    latency = (
        f"LLM call p50 {figures['locomo200.llm.call']['p50_ms']:.0f} ms / p95 "
        f"{figures['locomo200.llm.call']['p95_ms']:.0f} ms over {len(seconds)} calls "
        + ("made in this run" if timed_now else "made by the run that filled the verdict cache")
        if seconds
        else "every LLM verdict came from the cache of an earlier run (no latency measured here)"
    )
    md = (
        f"Made by `{command_line()}` with the rest of this file.\n\n"
        f"{len(labels)} hand-labelled LoCoMo turns ({dict(figures['locomo200.positives'])}); LLM "
        f"`{args.model}` on llama.cpp with {args.threads} threads, greedy, JSON-schema constrained, "
        f"{failed} replies invalid after the retry (counted as none). {latency}.\n\n"
        + table(["classifier", "precision", "recall", "F1", "category recall", "TP/FP/FN"], rows)
        + "\n\nBy sampling stratum (100 turns screened by a broad word list, 100 uniform from the rest):\n\n"
        + table(["stratum", "classifier", "precision", "recall", "TP/FP/FN"], strata_rows)
        + "\n\nLLM verdicts vs labels (label->verdict: count): "
        + ", ".join(f"{k}: {v}" for k, v in figures["locomo200.llm.confusion"].items())
        + "\n\nCaveat: the rules were written by the person who labelled the sample, after reading it, so the "
        "rules' figures here are optimistic (fitted, not held out); the LLM's prompt was not tuned on it. "
        "Construction uses the rules only; the LLM classifier (bench/sensitive_llm.py) was removed from the "
        "product."
    )
    path = write_sensitive(figures, md)
    print(f"wrote {path}")


def rules_heldout(locomo_json: Path) -> None:
    """Precision of the rules on every LoCoMo turn outside the 200-turn sample that they flag, hand-labelled
    after the rules were written (so not fitted; recall cannot be measured this way)."""
    labels = load_labels(HELDOUT)
    turns = {t.key: t for t in load_turns(locomo_json)}
    flagged = {k: classify_rules(turns[k].text) for k in labels}
    still = [k for k, c in flagged.items() if c is not None]
    correct = [k for k in still if labels[k] != "none"]
    exact = [k for k in still if labels[k] == flagged[k]]
    precision = len(correct) / len(still) if still else 0.0
    figures = {
        "locomo.heldout.rules.flagged": len(still),
        "locomo.heldout.rules.precision": precision,
        "locomo.heldout.rules.category_precision": len(exact) / len(still) if still else 0.0,
        "locomo.heldout.labels": dict(Counter(labels.values())),
    }
    false_by_category = Counter(flagged[k] for k in still if labels[k] == "none")
    md = (
        f"Every LoCoMo turn outside the 200-turn sample that the rules flagged when they were written "
        f"({len(labels)} turns; {len(still)} still flagged by the current rules), labelled by hand afterwards with "
        f"the criteria in bench/labels/README.md. Rules precision **{precision:.3f}** "
        f"({len(correct)}/{len(still)}), category also right {figures['locomo.heldout.rules.category_precision']:.3f}."
        f" False positives by rule: {dict(false_by_category)}. Compare with the fitted 0.912 on the sample "
        "(bench/results/sensitive.md): the held-out figure is the one to expect on new text."
    )
    path = write_results("sensitive_rules_heldout", figures, md)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
