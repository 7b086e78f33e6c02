"""Fresh-install time of the README's set-up command on a clean clone: first run, second run, and a new clone.

    .venv/bin/python -m bench.bench_install [--work /tmp/install_bench] [--repo .]

Each step runs `bash packaging/bootstrap.sh` exactly as the README says, timed wall-clock, with its own empty
pip cache (PIP_CACHE_DIR) and data dir (KIOSK_HOME) shared by the steps, so the first run compiles
llama-cpp-python and downloads every model, and the later runs show what the caches save:
  first        `git clone REPO clean && cd clean && bash packaging/bootstrap.sh` (empty caches)
  second       the same command again in the same clone (virtualenv, wheel cache and models kept)
  fresh-clone  a new clone with the warm pip cache and models (a CI box that keeps caches but not the tree)
Only committed files are in a clone. Logs of each step go to WORK/<step>.log.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.common import table, write_results

STEPS = ("first", "second", "fresh-clone")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _du_bytes(path: Path) -> int:
    if not path.exists():
        return 0
    output = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return int(output.split()[0])


def _environment(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOSK_") and k != "VIRTUAL_ENV"}
    env["PIP_CACHE_DIR"] = str(work / "pip-cache")
    env["KIOSK_HOME"] = str(work / "kiosk-home")
    return env


def _clone(repo: Path, target: Path) -> str:
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(repo), str(target)], check=True)
    return subprocess.run(
        ["git", "-C", str(target), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _models_state(clone: Path, env: dict[str, str]) -> dict[str, int]:
    listing = subprocess.run(
        [str(clone / ".venv/bin/kiosk"), "models", "list", "--json"], capture_output=True, text=True, env=env
    )
    if listing.returncode != 0:
        return {"verified": 0, "entries": 0}
    entries = json.loads(listing.stdout)
    rows = entries if isinstance(entries, list) else entries.get("models", [])
    verified = sum(1 for row in rows if row.get("verified") or row.get("state") == "verified")
    return {"verified": verified, "entries": len(rows)}


def run_step(step: str, repo: Path, work: Path) -> dict[str, Any]:
    env = _environment(work)
    clone = work / ("clean" if step in ("first", "second") else "clean2")
    commit = None
    if step != "second":
        commit = _clone(repo, clone)
    log = work / f"{step}.log"
    load = os.getloadavg()[0]
    cpu_before = _children_cpu()
    started = time.perf_counter()
    with log.open("w") as sink:
        done = subprocess.run(["bash", "packaging/bootstrap.sh"], cwd=clone, env=env, stdout=sink, stderr=sink)
    seconds = time.perf_counter() - started
    return {
        "step": step,
        "commit": commit,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(_children_cpu() - cpu_before, 1),
        "load_average_at_start": round(load, 1),
        "exit_code": done.returncode,
        "log": str(log),
        "pip_cache_bytes": _du_bytes(work / "pip-cache"),
        "kiosk_home_bytes": _du_bytes(work / "kiosk-home"),
        "venv_bytes": _du_bytes(clone / ".venv"),
        "models": _models_state(clone, env),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/install_bench"))
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset of " + ", ".join(STEPS))
    args = parser.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    if steps and steps[0] == "first":
        shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    partial = args.work / "install.partial.json"
    results: list[dict[str, Any]] = json.loads(partial.read_text()) if partial.exists() and steps[0] != "first" else []
    load_before = os.getloadavg()[0]
    for step in steps:
        print(f"bench_install: {step} …", flush=True)
        results.append(run_step(step, args.repo, args.work))
        partial.write_text(json.dumps(results, indent=2))
        print(f"bench_install: {step} took {results[-1]['seconds']} s (exit {results[-1]['exit_code']})", flush=True)

    figures = {f"install.{r['step']}.seconds": r["seconds"] for r in results}
    figures |= {f"install.{r['step']}.exit_code": r["exit_code"] for r in results}
    by_step = {r["step"]: r for r in results}
    if "first" in by_step and "second" in by_step and by_step["second"]["seconds"]:
        ratio = by_step["first"]["seconds"] / by_step["second"]["seconds"]
        figures["install.first_over_second.ratio"] = round(ratio, 1)
    rows = [
        [
            r["step"],
            r["commit"] or "(same clone)",
            f"{r['seconds'] / 60:.1f} min ({r['seconds']:.0f} s)",
            f"{r['cpu_seconds']:.0f}" if "cpu_seconds" in r else "",
            r.get("load_average_at_start", ""),
            r["exit_code"],
            f"{r['models']['verified']}/{r['models']['entries']}",
            f"{r['pip_cache_bytes'] / 1024**3:.2f}",
            f"{r['kiosk_home_bytes'] / 1024**3:.2f}",
            f"{r['venv_bytes'] / 1024**3:.2f}",
        ]
        for r in results
    ]
    body = (
        "`bash packaging/bootstrap.sh` (the set-up half of both README commands) on a clean `git clone`, "
        "with its own empty `PIP_CACHE_DIR` and `KIOSK_HOME` for the first run, reused by the later ones.\n\n"
        + table(
            [
                "run",
                "commit",
                "wall time",
                "CPU s (user+sys)",
                "load avg at start",
                "exit",
                "models verified",
                "pip cache GiB",
                "KIOSK_HOME GiB",
                ".venv GiB",
            ],
            rows,
        )
        + f"\n\nLoad average when the benchmark started: {load_before:.1f} on {os.cpu_count()} cores (other jobs "
        "may run: wall time well above CPU time means a step waited for the CPU). Models verified counts the "
        "manifest's required models; the optional large GGUFs are pulled on demand. The first run compiles "
        'llama-cpp-python from source (`CMAKE_ARGS="-DGGML_NATIVE=OFF"`) and downloads every model wheel; the '
        "second reuses the virtualenv, the wheel cache and the verified models; the fresh clone reuses the pip "
        "cache (the compiled llama-cpp-python wheel) and the models, and reinstalls the other packages.\n"
    )
    write_results("install", figures, body, extra={"runs": results})


if __name__ == "__main__":
    main()
