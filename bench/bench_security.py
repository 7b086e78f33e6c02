"""Re-run every attack of the security review (issue #34) end to end and write one table: attack, expected,
observed, and whether the defence held.

Each module of bench/attacks/ runs its attacks through the real CLI or the real services in a throwaway
KIOSK_HOME and reports what it observed; nothing here decides the outcome but the attacks themselves. A module
that crashes is reported as a row of its own, so a broken attack is never a silent pass.

.venv/bin/python -m bench.bench_security [--only MODULE ...]
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import time
import traceback
from pathlib import Path

from bench.attacks.result import AttackResult
from bench.common import table, write_results

MODULES = ("erasure_and_import", "enrollment", "injection_and_override", "at_rest", "bad_input")


def run_module(name: str, workdir: Path) -> tuple[list[AttackResult], float]:
    started = time.perf_counter()
    try:
        module = importlib.import_module(f"bench.attacks.{name}")
        results = list(module.run(workdir))
    except Exception as exc:  # the table must show a crashed attack module, not skip it
        traceback.print_exc()
        results = [AttackResult(f"{name}: the attack module itself", "runs", f"crashed: {exc!r}", True)]
    return results, time.perf_counter() - started


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=MODULES, help="run only these attack modules")
    args = parser.parse_args()
    rows: list[list[str]] = []
    figures: dict[str, float | int] = {}
    broken = 0
    for name in args.only or MODULES:
        with tempfile.TemporaryDirectory(prefix=f"bench-security-{name}-") as tmp:
            results, seconds = run_module(name, Path(tmp))
        figures[f"{name}.seconds"] = round(seconds, 1)
        for result in results:
            broken += result.broken
            verdict = "**BROKEN**" if result.broken else "held"
            rows.append([name, cell(result.attack), cell(result.expected), cell(result.observed), verdict])
            print(f"{verdict:10} {name}: {result.attack}", flush=True)
    figures["attacks"] = len(rows)
    figures["breaks"] = broken
    body = (
        f"{len(rows)} attacks re-run end to end, **{broken} broken**. Each row's observation is what the attack "
        "saw through the real CLI or services in a throwaway home directory.\n\n"
        + table(["area", "attack", "expected", "observed", "defence"], rows)
    )
    write_results("security", figures, body)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
