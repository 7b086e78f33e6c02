"""Issue #34, point 8 (the small ones; names are another module), re-run through the real `kiosk` command.

Each bad input is a `kiosk` subprocess with its own KIOSK_HOME: a directory as --config, a note id beyond 64
bits, a string-array .npy probe, a JSON nested 100,000 levels deep, an invalid setting from the environment, a
note full of terminal control sequences listed by `memory list`, a 431 KB PNG declaring 20000x20000 pixels (peak
memory of the child from resource.getrusage), and `ask --palm --roi`. Each reports the exit code, how many lines
stderr had and whether a traceback appeared.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.attacks.cli import KIOSK
from bench.attacks.result import AttackResult

CONTROLS = "\x1b[2J\x1b]0;pwned\x07\rFAKE LINE \x9b31m \u202eevil"
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\x9b", "\u202e")
PEAK_LIMIT_MB = 400.0
"""`ask` refuses before any model loads; decoding the 20000x20000 PNG took 2.1 GB."""
ENROLL_PEAK_LIMIT_MB = 1024.0
"""Enrollment loads the face models first (about 0.5 GB) before it reads the samples."""


def _environment(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    from kiosk.config import load_config

    models = load_config(path=None, environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"}).paths.models
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOSK_")}
    env.update({"KIOSK_HOME": str(home), "KIOSK_PATHS__MODELS_DIR": str(models), **(extra or {})})
    return env


def _measured_kiosk(env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `kiosk ARGS` from a small wrapper process, so RUSAGE_CHILDREN is this child's peak alone (MB)."""
    wrapper = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(r.stderr); sys.stdout.write(r.stdout)\n"
        "sys.stdout.write('\\nPEAK_KB %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(r.returncode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *KIOSK, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    stdout, _, peak = done.stdout.rpartition("\nPEAK_KB ")
    done.stdout = stdout
    return done, int(peak.strip() or 0) / 1024


def _stderr_lines(done: subprocess.CompletedProcess[str]) -> int:
    return len([line for line in done.stderr.splitlines() if line.strip()])


def _one_line_refusal(attack: str, done: subprocess.CompletedProcess[str], extra: str = "") -> AttackResult:
    lines = _stderr_lines(done)
    traceback = "Traceback" in done.stderr
    first = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    observed = f"exit {done.returncode}, {lines} stderr line(s), traceback: {'yes' if traceback else 'no'}{extra}"
    return AttackResult(
        attack=attack,
        expected="one 'error:' line on stderr, exit 2, no traceback",
        observed=f"{observed}: {first[:160]}",
        broken=traceback or done.returncode != 2 or lines != 1,
    )


def big_png(path: Path, side: int) -> Path:
    """A valid gray PNG of side x side black pixels, a few hundred KB on disk (zlib packs the zero rows)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(9)
    rows = (b"\x00" * (side + 1)) * 100
    idat = b"".join(packer.compress(rows) for _ in range(side // 100)) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


def _tracebacks(workdir: Path) -> list[AttackResult]:
    env = _environment(workdir / "home-tracebacks")
    string_probe = workdir / "strings.npy"
    np.save(string_probe, np.array(["a", "b", "c"]))
    nested = workdir / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    cases = {
        "`kiosk --config <directory> memory users`": ["--config", str(workdir), "memory", "users"],
        "`kiosk memory delete 99999999999999999999999`": ["memory", "delete", "99999999999999999999999"],
        "`kiosk ask --probe-npy` with a string-array .npy": ["ask", "hi", "--probe-npy", str(string_probe), "--no-llm"],
        "`kiosk memory import` of JSON nested 100,000 levels": [
            *("memory", "import", str(nested), "--user", "Ann", "--construct", "fast"),
        ],
    }
    results = []
    for attack, args in cases.items():
        done = subprocess.run([*KIOSK, *args], env=env, capture_output=True, text=True, timeout=300, check=False)
        results.append(_one_line_refusal(attack, done))
    bad_env = _environment(workdir / "home-tracebacks", {"KIOSK_LLM__THREADS": "abc"})
    done = subprocess.run([*KIOSK, "memory", "users"], env=bad_env, capture_output=True, text=True, timeout=300)
    result = _one_line_refusal("`KIOSK_LLM__THREADS=abc kiosk memory users`", done)
    named = "KIOSK_LLM__THREADS" in done.stderr and ".toml" not in done.stderr
    results.append(
        AttackResult(
            result.attack,
            "one line naming the environment variable (not a config file), exit 2",
            result.observed,
            result.broken or not named,
        )
    )
    return results


def _control_sequences(workdir: Path) -> list[AttackResult]:
    from kiosk.config import load_config
    from kiosk.memory import EMBEDDING_DIM, Note
    from kiosk.memory.open import open_store

    home = workdir / "home-controls"
    env = _environment(home)
    vector = np.random.default_rng(8).standard_normal(EMBEDDING_DIM).astype(np.float32)
    with open_store(load_config(path=None, environ=env)) as store:
        owner = store.add_user("Eve")
        store.add_note(Note(None, owner.id, "face", CONTROLS, datetime(2024, 1, 1, tzinfo=UTC), embedding=vector))
    human = subprocess.run([*KIOSK, "memory", "list", "--user", "Eve"], env=env, capture_output=True, text=True)
    raw = [repr(c) for c in RAW_CONTROLS if c in human.stdout]
    as_json = subprocess.run(
        [*KIOSK, "memory", "list", "--user", "Eve", "--json"], env=env, capture_output=True, text=True
    )
    raw_json = [repr(c) for c in RAW_CONTROLS if c in as_json.stdout]
    try:
        round_trip = json.loads(as_json.stdout)["notes"][0]["content"] == CONTROLS
    except (ValueError, KeyError, IndexError):
        round_trip = False
    return [
        AttackResult(
            "`kiosk memory list` of a note holding ESC [2J, an OSC title, BEL, CR, C1 CSI and a bidi override",
            "no raw control character reaches the terminal; shown as visible escapes (\\x1b...)",
            f"exit {human.returncode}; raw control characters printed: {', '.join(raw) or 'none'}; "
            f"{human.stdout.count(chr(10))} output lines",
            human.returncode != 0 or bool(raw) or human.stdout.count("\n") != 2,
        ),
        AttackResult(
            "`kiosk memory list --json` of the same note",
            "valid JSON, every control character escaped, content round-trips exactly",
            f"exit {as_json.returncode}; raw control characters: {', '.join(raw_json) or 'none'}; "
            f"round-trips: {round_trip}",
            as_json.returncode != 0 or bool(raw_json) or not round_trip,
        ),
    ]


def _pixel_bomb(workdir: Path) -> list[AttackResult]:
    big = big_png(workdir / "bomb.png", 20_000)
    env = _environment(workdir / "home-bomb")
    results = []
    for option in ("--face", "--palm"):
        done, peak_mb = _measured_kiosk(env, "ask", "hi", option, str(big), "--no-llm")
        result = _one_line_refusal(
            f"`kiosk ask {option}` a {big.stat().st_size // 1024} KB PNG declaring 20000x20000 pixels",
            done,
            f", peak memory {peak_mb:.0f} MB",
        )
        refused = "megapixel limit" in done.stderr
        results.append(
            AttackResult(
                result.attack,
                f"refused from its header before decoding (one line, exit 2), peak memory < {PEAK_LIMIT_MB:.0f} MB",
                result.observed,
                result.broken or not refused or peak_mb >= PEAK_LIMIT_MB,
            )
        )
    folder = workdir / "bomb-enroll"
    folder.mkdir(exist_ok=True)
    (folder / "a.png").symlink_to(big)
    done, peak_mb = _measured_kiosk(env, "users", "enroll", "Mallory", "--face", str(folder))
    refused = "megapixel limit" in done.stderr and done.returncode != 0 and "Traceback" not in done.stderr
    results.append(
        AttackResult(
            "`kiosk users enroll --face` a folder holding the 20000x20000 PNG",
            f"sample refused for the pixel cap, nothing stored, peak memory < {ENROLL_PEAK_LIMIT_MB:.0f} MB",
            f"exit {done.returncode}, traceback: {'yes' if 'Traceback' in done.stderr else 'no'}, "
            f"reason given: {'yes' if refused else 'no'}, peak memory {peak_mb:.0f} MB",
            not refused or peak_mb >= ENROLL_PEAK_LIMIT_MB,
        )
    )
    return results


def _palm_roi(workdir: Path) -> list[AttackResult]:
    env = _environment(workdir / "home-roi")
    absent = workdir / "absent-roi.png"
    done = subprocess.run(
        [*KIOSK, "ask", "hi", "--palm", str(absent), "--roi", "--no-llm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    exists = "No such option" not in done.stderr and "does not exist" in done.stderr
    return [
        AttackResult(
            "`kiosk ask --palm ROI --roi` (the flag the palm error message suggests)",
            "the --roi flag exists (here: the absent file is reported in one line)",
            f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:160] if done.stderr.strip() else ''}",
            not exists,
        )
    ]


def run(workdir: Path) -> list[AttackResult]:
    workdir.mkdir(parents=True, exist_ok=True)
    return [*_tracebacks(workdir), *_control_sequences(workdir), *_pixel_bomb(workdir), *_palm_roi(workdir)]


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for outcome in run(Path(tmp)):
            print(f"{'BROKEN' if outcome.broken else 'held  '} {outcome.attack}\n       {outcome.observed}")
