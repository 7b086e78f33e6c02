"""The self-contained bundle: size (models vs code), build time (from scratch and rebuilt), cold start.

    .venv/bin/python -m bench.bench_bundle [--dist /tmp/bench_bundle] [--runs 3] [--skip-cold-build]

Build: `packaging/build_bundle.sh` once with an empty PyInstaller work dir (from scratch) and once more with the
same work dir and no source change (the rebuild a developer or CI with a cached build/ sees).
Cold start: process start to the app's ready line (`kiosk --desktop --exit-after 0`, offscreen, the face video as
camera, a fresh KIOSK_HOME each run), median of --runs, for the bundle and, in the same run, for the
development install (.venv/bin/kiosk) as the peer. "Ready" is the app's own signal (services loaded, main
screen shown), timed from the kernel's process start time, so interpreter and bundle unpacking count too.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.common import table, write_results

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"kiosk: ready in (?P<ready>[\d.]+) s")
PHASE = re.compile(r"build_bundle: (?P<phase>\w+) (?P<seconds>\d+) s")


def du_bytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(dist: Path, workpath: Path) -> dict[str, Any]:
    env = {**os.environ, "BUNDLE_WORKPATH": str(workpath)}
    shutil.rmtree(dist, ignore_errors=True)
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        ["bash", str(ROOT / "packaging" / "build_bundle.sh"), str(dist)], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bundle build failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    phases = {m["phase"]: int(m["seconds"]) for m in PHASE.finditer(done.stdout)}
    return {"seconds": round(seconds, 1), "cpu_seconds": round(_children_cpu() - cpu_before, 1), "phases_s": phases}


def build_from_log(log: Path) -> dict[str, Any]:
    """Build figures of an earlier `time bash packaging/build_bundle.sh DIST` run, from its output."""
    text = log.read_text()
    real = re.search(r"^real\s+(\d+)m([\d.]+)s", text, re.MULTILINE)
    if real is None:
        raise SystemExit(f"{log} has no `real` line from `time`")
    phases = {m["phase"]: int(m["seconds"]) for m in PHASE.finditer(text)}
    cpu = sum(int(m[1]) * 60 + float(m[2]) for m in re.finditer(r"^(?:user|sys)\s+(\d+)m([\d.]+)s", text, re.MULTILINE))
    return {
        "seconds": round(int(real[1]) * 60 + float(real[2]), 1),
        "cpu_seconds": round(cpu, 1),
        "phases_s": phases,
        "log": str(log),
    }


def sizes(bundle: Path) -> dict[str, Any]:
    internal = bundle / "_internal"
    parts = sorted(((du_bytes(p), p.name) for p in internal.iterdir()), reverse=True)[:10]
    return {
        "total_bytes": du_bytes(bundle),
        "models_bytes": du_bytes(bundle / "models"),
        "code_bytes": du_bytes(internal) + (bundle / "kiosk").stat().st_size,
        "largest_in_code": [{"name": name, "bytes": size} for size, name in parts],
    }


def cold_start(executable: Path, video: Path, home: Path, extra_env: dict[str, str]) -> dict[str, float]:
    shutil.rmtree(home, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOSK_")}
    env |= {"QT_QPA_PLATFORM": "offscreen", "KIOSK_HOME": str(home), "KIOSK_CAPTURE__FACE_SOURCE": str(video)}
    env |= extra_env
    started = time.perf_counter()
    done = subprocess.run(
        [str(executable), "--desktop", "--exit-after", "0"], env=env, capture_output=True, text=True, timeout=900
    )
    wall = time.perf_counter() - started
    match = READY.search(done.stdout)
    if done.returncode != 0 or not match:
        raise SystemExit(
            f"{executable} did not get ready (exit {done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}"
        )
    return {"ready_s": float(match["ready"]), "wall_to_exit_s": round(wall, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dist", type=Path, default=Path("/tmp/bench_bundle"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-cold-build", action="store_true", help="only the rebuild with build/pyinstaller")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the second, unchanged build")
    parser.add_argument(
        "--prebuilt",
        type=Path,
        default=None,
        help="measure this already built bundle folder instead of building (build time from --build-log)",
    )
    parser.add_argument("--build-log", type=Path, default=None, help="`time bash packaging/build_bundle.sh` output")
    parser.add_argument("--video", type=Path, default=None, help="camera video (default: KIOSK_DATA face video)")
    args = parser.parse_args()
    from kiosk.config import load_config

    config = load_config(None)
    video = args.video or config.paths.eval_data_dir / "face_video" / "short_hamilton_clip.mp4"
    load_before = os.getloadavg()[0]

    builds: dict[str, dict[str, Any]] = {}
    if args.prebuilt is not None:
        if args.build_log is not None:
            builds["logged"] = build_from_log(args.build_log)
        bundle = args.prebuilt
    elif args.skip_cold_build:
        builds["rebuild"] = build(args.dist / "dist", ROOT / "build" / "pyinstaller")
    else:
        workpath = args.dist / "work"
        shutil.rmtree(workpath, ignore_errors=True)
        builds["from_scratch"] = build(args.dist / "dist", workpath)
        if not args.no_rebuild:
            builds["rebuild"] = build(args.dist / "dist", workpath)
    if args.prebuilt is None:
        bundle = args.dist / "dist" / "bio-memory-kiosk"
    size = sizes(bundle)

    starts: dict[str, list[dict[str, float]]] = {"bundle": [], "venv": []}
    peers = {
        "bundle": (bundle / "kiosk", {}),
        "venv": (ROOT / ".venv" / "bin" / "kiosk", {"KIOSK_PATHS__MODELS_DIR": str(config.paths.models)}),
    }
    for run in range(args.runs):
        for name, (executable, extra) in peers.items():  # interleaved, so load changes hit both alike
            starts[name].append(cold_start(executable, video, args.dist / f"home-{name}-{run}", extra))
            print(f"bench_bundle: {name} run {run + 1}: {starts[name][-1]}", flush=True)

    gib = 1024**3
    figures: dict[str, Any] = {
        "bundle.total_gib": round(size["total_bytes"] / gib, 3),
        "bundle.models_gib": round(size["models_bytes"] / gib, 3),
        "bundle.code_gib": round(size["code_bytes"] / gib, 3),
    }
    for name, result in builds.items():
        figures[f"build.{name}.seconds"] = result["seconds"]
    for name, runs in starts.items():
        figures[f"cold_start.{name}.ready.p50_s"] = round(statistics.median(r["ready_s"] for r in runs), 2)
        figures[f"cold_start.{name}.wall_to_exit.p50_s"] = round(
            statistics.median(r["wall_to_exit_s"] for r in runs), 2
        )
    figures["cold_start.bundle_over_venv.ratio"] = round(
        figures["cold_start.bundle.ready.p50_s"] / figures["cold_start.venv.ready.p50_s"], 2
    )

    size_rows = [
        ["total", f"{size['total_bytes'] / gib:.2f}"],
        ["models/ (verified models + FaceNet IR conversion)", f"{size['models_bytes'] / gib:.2f}"],
        ["code (_internal/ + launcher: Python, Qt, OpenVINO, ORT, llama.cpp, ...)", f"{size['code_bytes'] / gib:.2f}"],
    ] + [[f"  _internal/{p['name']}", f"{p['bytes'] / gib:.3f}"] for p in size["largest_in_code"]]
    build_rows = [
        [
            name.replace("_", " "),
            f"{r['seconds']:.0f}",
            f"{r['cpu_seconds']:.0f}" if "cpu_seconds" in r else "",
            r["phases_s"].get("pyinstaller", ""),
            r["phases_s"].get("models", ""),
        ]
        for name, r in builds.items()
    ]
    start_rows = [
        [
            name,
            f"{statistics.median(r['ready_s'] for r in runs):.1f}",
            ", ".join(f"{r['ready_s']:.1f}" for r in runs),
            f"{statistics.median(r['wall_to_exit_s'] for r in runs):.1f}",
        ]
        for name, runs in starts.items()
    ]
    body = (
        "## Size\n\n"
        + table(["part", "GiB"], size_rows)
        + "\n\n## Build time (`packaging/build_bundle.sh`)\n\n"
        + table(["build", "wall s", "CPU s (user+sys)", "pyinstaller s", "models pull+export s"], build_rows)
        + (
            f"\n\nBuild measured from `{args.build_log}` (`time bash packaging/build_bundle.sh`) of the bundle "
            f"measured here ({args.prebuilt}); wall time far above CPU time means the build waited for the CPU."
            if args.prebuilt is not None and args.build_log is not None
            else ""
        )
        + "\n\n## Cold start: process start to ready (services loaded, main screen shown)\n\n"
        + table(["install", "ready p50 s", f"ready, {args.runs} runs (s)", "wall to exit p50 s"], start_rows)
        + f"\n\nbundle / venv ready ratio: {figures['cold_start.bundle_over_venv.ratio']:.2f}. Offscreen, the face "
        "video as camera, a fresh KIOSK_HOME per run (the memory DB is created in each). The files were in the page "
        "cache (just built): a terminal's first boot after install also reads ~2 GB from disk. "
        f"Load average at the start: {load_before:.1f} on {os.cpu_count()} cores, shared with other jobs.\n"
    )
    write_results("bundle", figures, body, extra={"builds": builds, "sizes": size, "cold_starts": starts})


if __name__ == "__main__":
    main()
