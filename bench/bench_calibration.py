"""Calibration figures and wall time per modality: palm on Tongji (all pairs), face on LFW (pairs.txt).

Face is reported twice from one embedding pass: the official View-2 pairs (3,000 genuine / 3,000
impostor) and the shipped protocol, pairs+all-impostors (the same genuine pairs; impostors = every
different-identity pair of the 7,701 pairs.txt images, deterministically sampled to --max-impostors),
which is what resolves the FAR = 1e-4 threshold.

Embedding is timed cold (existing cache entries ignored); the run writes the embedding cache that
`kiosk calibrate` then reuses.

    .venv/bin/python bench/bench_calibration.py [--modality face palm] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kiosk.calibration.embed import embedding_cache, encoder_name, load_embedder
from kiosk.calibration.run import CalibrationResult, DataSpec, run_calibration
from kiosk.config import load_config

RESULTS = Path(__file__).resolve().parent / "results"


def _figures(result: CalibrationResult, wall_s: float) -> dict[str, Any]:
    calibration = result.calibration
    figures = calibration.figures
    points = calibration.operating_points
    tau_d = points["tau_d"]
    return {
        "protocol": calibration.dataset.protocol,
        "images": calibration.dataset.images,
        "identities": calibration.dataset.identities,
        "unreadable": len(calibration.dataset.unreadable),
        "genuine_pairs": calibration.counts.genuine,
        "impostor_pairs": calibration.counts.impostor,
        "impostor_pairs_available": calibration.counts.impostor_available,
        "tau_d": figures.tau_d,
        "far_at_tau_d": tau_d.far.value,
        "far_at_tau_d_ci95": tau_d.far.ci95,
        "frr_at_tau_d": tau_d.frr.value,
        "frr_at_tau_d_ci95": tau_d.frr.ci95,
        "eer": figures.eer,
        "eer_ci95": figures.eer_ci95,
        "eer_threshold": figures.eer_threshold,
        "threshold_far_1e-4": points["far"].threshold,
        "far_1e-4_resolved": points["far"].resolved,
        "tar_at_far_1e-3": figures.far_targets["1e-03"].tar.value,
        "tar_at_far_1e-4": figures.far_targets["1e-04"].tar.value,
        "strict_threshold": points["strict"].threshold,
        "far_at_strict": points["strict"].far.value,
        "frr_at_strict": points["strict"].frr.value,
        "seconds": calibration.seconds,
        "cached_embeddings": calibration.dataset.cached_embeddings,
        "wall_s": round(wall_s, 2),
        "encoder": calibration.encoder.name,
        "encoder_sha256": calibration.encoder.sha256,
    }


COLD_KEYS = ("embed_ms_per_image", "wall_s", "seconds")


def _carry_cold_timing(figures: dict[str, Any], previous: dict[str, Any] | None, previous_date: str | None) -> None:
    """With --reuse-embeddings the embed time is a cache read: keep the cold run's timing beside it."""
    if figures["seconds"].get("embed", 0) > 0 and figures.get("cached_embeddings", 0) == 0:
        return
    if previous is not None:
        source = previous.get("cold") or {key: previous.get(key) for key in COLD_KEYS}
        figures["cold"] = {**source, "date": source.get("date", previous_date)}


def _timed(spec: DataSpec, embedder: Any, name: str, cache: Any) -> tuple[CalibrationResult, float]:
    started = time.perf_counter()
    result = run_calibration(spec, embedder, encoder_name=name, cache=cache)
    return result, time.perf_counter() - started


def bench_palm(config: Any, data_root: Path, reuse: bool) -> dict[str, Any]:
    """Tongji twice: plain cosine (palm.alignment_search off) and the re-alignment search the kiosk ships (every
    ordered pair, the probe's 27 re-alignments against the other image's template)."""
    data = data_root / "palm_tongji_palmnet"
    results: dict[str, Any] = {}
    for key, search in (("tongji.all_pairs", False), ("tongji.all_pairs_search", True)):
        variant = config.model_copy(deep=True)
        variant.palm.alignment_search = search
        started = time.perf_counter()
        embedder = load_embedder(variant, "palm")
        load_s = time.perf_counter() - started
        cache = embedding_cache(variant, embedder, data, reuse=reuse or search)  # the cosine pass just wrote it
        name = encoder_name(variant, "palm", embedder)
        result, wall = _timed(DataSpec(data, benchmark="tongji"), embedder, name, cache)
        figures = _figures(result, wall)
        figures["embedder_load_s"] = round(load_s, 2)
        figures["embed_ms_per_image"] = round(1000 * result.calibration.seconds["embed"] / figures["images"], 2)
        figures["alignment_search"] = search
        if search:
            figures["note"] = "palm.alignment_search: ordered pairs; embed = templates (cached), score = the search"
        results[key] = figures
    return results


def bench_face(config: Any, data_root: Path, max_impostors: int, reuse: bool) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = load_embedder(config, "face")
    load_s = time.perf_counter() - started
    data = data_root / "lfw3d_frontalized"
    name = encoder_name(config, "face", embedder)
    pairs = data / "pairs.txt"
    cold = embedding_cache(config, embedder, data, reuse=reuse)
    official, wall_official = _timed(DataSpec(data, pairs_file=pairs, benchmark="lfw"), embedder, name, cold)
    warm = embedding_cache(config, embedder, data, reuse=True)
    shipped_spec = DataSpec(data, pairs_file=pairs, all_impostors=True, benchmark="lfw", max_impostors=max_impostors)
    shipped, wall_shipped = _timed(shipped_spec, embedder, name, warm)
    official_figures = _figures(official, wall_official)
    official_figures["embedder_load_s"] = round(load_s, 2)
    official_figures["embed_ms_per_image"] = round(
        1000 * official.calibration.seconds["embed"] / official_figures["images"], 2
    )
    tau_d = official.calibration.operating_points["tau_d"]
    official_figures["accuracy_at_tau_d"] = 1 - (tau_d.far.errors + tau_d.frr.errors) / (
        tau_d.far.trials + tau_d.frr.trials
    )
    shipped_figures = _figures(shipped, wall_shipped)
    shipped_figures["note"] = "embeddings reused from the cold run above (same images); wall_s excludes embedding"
    return {"lfw.pairs": official_figures, "lfw.pairs_all_impostors": shipped_figures}


def _embed_cell(figures: dict[str, Any]) -> str:
    cold = figures.get("cold")
    if cold and cold.get("embed_ms_per_image"):
        return f"cached ({cold['embed_ms_per_image']} cold, {cold['date']})"
    return str(figures.get("embed_ms_per_image", "—"))


def _markdown(payload: dict[str, Any]) -> str:
    rows = [(key, value) for key, value in payload["results"].items()]
    header = (
        "| set | protocol | images | genuine | impostor | tau_D | FAR@tau_D | FRR@tau_D | EER (95% CI) "
        "| thr FAR=1e-4 | TAR@1e-3 | TAR@1e-4 | strict tau (FAR, FRR) | embed ms/img | wall s |"
    )
    lines = [
        "# Threshold calibration: tau_D, EER, FAR/FRR per modality",
        "",
        f"Command: `{payload['command']}`  ",
        f"Date: {payload['date']}  ",
        f"Machine: {payload['machine']}",
        "",
        header,
        "|" + "---|" * 15,
    ]
    for key, r in rows:
        eer_ci = r["eer_ci95"] or (float("nan"), float("nan"))
        resolved = "" if r["far_1e-4_resolved"] else " (unresolved)"
        lines.append(
            f"| {key} | {r['protocol']} | {r['images']:,} | {r['genuine_pairs']:,} | {r['impostor_pairs']:,} "
            f"| {r['tau_d']:.4f} | {r['far_at_tau_d']:.2e} | {r['frr_at_tau_d']:.2%} "
            f"| {r['eer']:.2%} ({eer_ci[0]:.2%}–{eer_ci[1]:.2%}) | {r['threshold_far_1e-4']:.4f}{resolved} "
            f"| {r['tar_at_far_1e-3']:.2%} | {r['tar_at_far_1e-4']:.2%} "
            f"| {r['strict_threshold']:.4f} ({r['far_at_strict']:.1e}, {r['frr_at_strict']:.2%}) "
            f"| {_embed_cell(r)} | {r['wall_s']} |"
        )
    lines += ["", "Stage seconds per set:", ""]
    for key, r in rows:
        line = f"- {key}: {r['seconds']}" + (f" — {r['note']}" if r.get("note") else "")
        if r.get("cold"):
            line += f"; cold run {r['cold']['date']}: {r['cold'].get('seconds')}, wall {r['cold'].get('wall_s')} s"
        lines.append(line)
    lines += [
        "",
        "FAR = impostor score >= tau, FRR = genuine score < tau; intervals are Clopper-Pearson 95 %,",
        "EER interval a 200-resample bootstrap. tau_D = density intersection between the modes (binned",
        "Gaussian KDE, Silverman bandwidth, all scores). 'strict' = max(tau_D, FAR=1e-4 threshold), the",
        "shipped default for shared terminals. 'cached (X cold, date)': figures from cached embeddings, X = ms per",
        "image of the cold embedding run finished at that date (same model). tongji.all_pairs_search:",
        "palm.alignment_search (the kiosk's default), every ordered pair, a probe's 27 ROI re-alignments against the",
        "other image's template (its score stage encodes them). Encoders: "
        + ", ".join(sorted({f"{r['encoder']} ({r['encoder_sha256'][:12]})" for _, r in rows})),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modality", nargs="+", choices=("face", "palm"), default=["palm", "face"])
    parser.add_argument("--data", type=Path, default=None, help="Eval data root (default paths.eval_data_dir).")
    parser.add_argument("--max-impostors", type=int, default=2_000_000)
    parser.add_argument(
        "--reuse-embeddings",
        action="store_true",
        help="Use cached embeddings (figures only); the previous cold run's timing is kept under 'cold'.",
    )
    args = parser.parse_args()
    config = load_config()
    data_root = args.data or config.paths.eval_data_dir
    previous = RESULTS / "calibration.json"
    results: dict[str, Any] = json.loads(previous.read_text())["results"] if previous.is_file() else {}
    previous_date = json.loads(previous.read_text()).get("date") if previous.is_file() else None
    fresh: dict[str, Any] = {}
    if "palm" in args.modality:
        fresh.update(bench_palm(config, data_root, args.reuse_embeddings))
    if "face" in args.modality:
        fresh.update(bench_face(config, data_root, args.max_impostors, args.reuse_embeddings))
    if args.reuse_embeddings:
        for key, figures in fresh.items():
            _carry_cold_timing(figures, results.get(key), previous_date)
    results.update(fresh)
    payload = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs (shared with "
        f"other jobs; load average {os.getloadavg()[0]:.1f} at the end), Python {platform.python_version()}",
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    flat = {f"{key}.{name}": value for key, figures in results.items() for name, value in figures.items()}
    (RESULTS / "calibration.json").write_text(json.dumps({**payload, "flat": flat}, indent=2) + "\n")
    (RESULTS / "calibration.md").write_text(_markdown(payload))
    print(_markdown(payload))


if __name__ == "__main__":
    main()
