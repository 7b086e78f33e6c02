"""The self-contained bundle, built on this machine: it starts offscreen with the face video as its camera, and
`kiosk doctor` in it is green on a healthy terminal and red, naming the problem, for a corrupt model or a
missing DB.

The build is the bulk of the time (~5 min on this 2-core box; bench/results/bundle.md). `build_bundle.sh` keeps
PyInstaller's work dir (build/pyinstaller, locked while in use), though a rebuild measured no faster.
Set KIOSK_TEST_BUNDLE=<folder>/bio-memory-kiosk to test an already built bundle instead of building one.

Marked `bundle`: the default test run deselects it (pyproject addopts), `.ci/run` runs it as its own step with
`.venv/bin/python -m pytest -m bundle tests/packaging/test_bundle.py`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import PROJECT_ROOT
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.models.manifest import load_manifest

pytestmark = [pytest.mark.bundle, pytest.mark.slow, pytest.mark.real_models, pytest.mark.real_data]

BUILD_TIMEOUT_S = 45 * 60
RUN_FOR_S = 20
STATUS_LINE = re.compile(
    r"^kiosk: ready in (?P<ready>[\d.]+) s, ran (?P<ran>[\d.]+) s: camera frames=(?P<frames>\d+), "
    r"faces seen=(?P<faces>\d+)",
    re.MULTILINE,
)
CORRUPTED_MODEL = "minilm-l6-int8"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    prebuilt = os.environ.get("KIOSK_TEST_BUNDLE")
    if prebuilt:
        yield Path(prebuilt)
        return
    dist = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    build = subprocess.run(
        ["bash", str(PROJECT_ROOT / "packaging" / "build_bundle.sh"), str(dist)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert build.returncode == 0, f"bundle build failed:\n{build.stdout[-3000:]}\n{build.stderr[-5000:]}"
    print(f"bundle built in {time.monotonic() - started:.0f} s: {build.stdout.strip().splitlines()[-1]}")
    yield dist / "bio-memory-kiosk"
    shutil.rmtree(dist, ignore_errors=True)  # ~2 GB; pytest would keep the last three runs' copies


@pytest.fixture()
def terminal_env(tmp_path: Path, data_dir: Path) -> dict[str, str]:
    """A terminal's environment: nothing from the dev checkout, the face video as camera, a fresh home."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KIOSK_", "PYTHON", "VIRTUAL_ENV", "QT_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY")
    }
    env["PATH"] = "/usr/bin:/bin"
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["KIOSK_HOME"] = str(tmp_path / "home")
    env["KIOSK_CAPTURE__FACE_SOURCE"] = str(data_dir / "face_video" / "short_hamilton_clip.mp4")
    return env


def _doctor(bundle: Path, env: dict[str, str], cwd: Path) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [str(bundle / "kiosk"), "doctor", "--json"], env=env, cwd=cwd, capture_output=True, text=True, timeout=1200
    )
    assert done.stdout.strip(), f"doctor printed nothing (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return done.returncode, json.loads(done.stdout)


def _failed(report: dict[str, Any]) -> list[dict[str, str]]:
    return [check for check in report["checks"] if check["status"] == "fail"]


def _create_db(env: dict[str, str]) -> None:
    with SqliteStore(Path(env["KIOSK_HOME"]) / "memory.db") as store:
        store.add_user("technician-check")


def test_the_bundle_starts_offscreen_with_the_face_video_as_camera(
    bundle: Path, terminal_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(bundle / "kiosk"), "--desktop", "--exit-after", str(RUN_FOR_S)],
        env=terminal_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr[-4000:]}"
    match = STATUS_LINE.search(done.stdout)
    assert match, f"no status line in: {done.stdout!r}"
    print(done.stdout.strip())
    assert float(match["ran"]) == RUN_FOR_S
    assert int(match["frames"]) >= RUN_FOR_S, "the analysis loop should see at least a frame a second"
    assert int(match["faces"]) > 0, "the video shows faces: the bundled detector must find them"
    assert (Path(terminal_env["KIOSK_HOME"]) / "memory.db").is_file(), "the first start creates the memory DB"


def test_a_start_up_failure_prints_the_on_screen_error_and_exits_non_zero(
    bundle: Path, terminal_env: dict[str, str], tmp_path: Path
) -> None:
    terminal_env["KIOSK_CAPTURE__FACE_SOURCE"] = str(tmp_path / "no-such-camera.mp4")
    done = subprocess.run(
        [str(bundle / "kiosk"), "--exit-after", "5"],
        env=terminal_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr[-3000:]}"
    assert done.stdout.startswith("kiosk: start-up failed: frame source"), done.stdout
    assert "no-such-camera.mp4" in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_doctor_is_green_on_a_healthy_terminal(bundle: Path, terminal_env: dict[str, str], tmp_path: Path) -> None:
    _create_db(terminal_env)
    code, report = _doctor(bundle, terminal_env, tmp_path)
    assert code == 0 and report["healthy"], _failed(report)
    names = {check["name"] for check in report["checks"]}
    assert {"memory database", "disk", "face source", "calibration face", f"model {CORRUPTED_MODEL}"} <= names
    assert all(check["status"] == "ok" for check in report["checks"] if check["name"].startswith("model "))


def test_doctor_is_red_and_names_a_corrupted_model(bundle: Path, terminal_env: dict[str, str], tmp_path: Path) -> None:
    """A models dir of symlinks to the bundle's verified models, with one of them replaced by a damaged copy."""
    _create_db(terminal_env)
    models = tmp_path / "models"
    models.mkdir()
    for item in (bundle / "models").iterdir():
        if not item.name.startswith("."):  # verification stamps belong to the originals
            (models / item.name).symlink_to(item)
    victim = models / load_manifest(bundle / "_internal" / "models" / "manifest.toml").get(CORRUPTED_MODEL).file
    damaged = bytearray(victim.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    victim.unlink()
    victim.write_bytes(bytes(damaged))
    terminal_env["KIOSK_PATHS__MODELS_DIR"] = str(models)

    code, report = _doctor(bundle, terminal_env, tmp_path)

    assert code == 1 and not report["healthy"]
    [problem] = _failed(report)
    assert problem["name"] == f"model {CORRUPTED_MODEL}"
    assert str(victim) in problem["message"] and "corrupt" in problem["message"]
    assert problem["fix"], "a red check must say what to do"


def test_doctor_is_red_when_the_memory_db_is_missing(
    bundle: Path, terminal_env: dict[str, str], tmp_path: Path
) -> None:
    code, report = _doctor(bundle, terminal_env, tmp_path)
    assert code == 1 and not report["healthy"]
    [problem] = _failed(report)
    db = Path(terminal_env["KIOSK_HOME"]) / "memory.db"
    assert problem["name"] == "memory database" and f"{db} does not exist" in problem["message"]
    assert "backup" in problem["fix"]
    assert not db.exists(), "the doctor reports a missing DB, it does not create an empty one"


def test_the_bundle_carries_the_portable_llama_build(bundle: Path) -> None:
    """Whatever build .venv has (the bootstrap picks the AVX-512 one on CPUs that have it), a bundle goes to CPUs
    nobody checked: its ggml must not use AVX-512. Read in a child process, from the bundled library itself."""
    cpu_library = next(bundle.rglob("libggml-cpu.so"))
    code = (
        "import ctypes, sys; lib = sys.argv[1]; "
        "ctypes.CDLL(lib + '/libggml-base.so', mode=ctypes.RTLD_GLOBAL); "
        "cpu = ctypes.CDLL(lib + '/libggml-cpu.so'); print(cpu.ggml_cpu_has_avx2(), cpu.ggml_cpu_has_avx512())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(cpu_library.parent)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["1", "0"], f"bundled ggml: AVX2, AVX-512 = {done.stdout.strip()}"
