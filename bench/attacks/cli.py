"""The real `kiosk` command in a throwaway home directory, for the attack modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KIOSK = [sys.executable, "-m", "kiosk"]


def environment(home: Path) -> dict[str, str]:
    """This process's environment without its KIOSK_ settings, pointed at `home`, with the pulled models."""
    from kiosk.config import load_config

    base = load_config(path=None, environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOSK_")}
    env.update(
        {
            "KIOSK_HOME": str(home),
            "KIOSK_CONFIG": "",
            "KIOSK_PATHS__MODELS_DIR": str(base.paths.models),
            "KIOSK_MEMORY__CONSTRUCTION": "fast",
        }
    )
    return env


def kiosk(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KIOSK, *args], env=env, capture_output=True, text=True, timeout=300, check=False)


def checked(step: subprocess.CompletedProcess[str], what: str) -> subprocess.CompletedProcess[str]:
    """The step, or RuntimeError naming what failed: an attack's set-up must not fail silently."""
    if step.returncode != 0:
        raise RuntimeError(f"{what} failed ({step.returncode}): {step.stderr.strip()[-300:]}")
    return step
