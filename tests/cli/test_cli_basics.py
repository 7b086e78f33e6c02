import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_kiosk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("DISPLAY", None)
    full_env.pop("WAYLAND_DISPLAY", None)
    full_env.pop("QT_QPA_PLATFORM", None)
    return subprocess.run(
        [sys.executable, "-m", "kiosk", *args], capture_output=True, text=True, env=full_env, timeout=120, check=False
    )


def test_no_display_says_what_it_needs() -> None:
    result = run_kiosk()
    assert result.returncode == 3
    assert "needs a display" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_config_key_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "kiosk.toml"
    config.write_text("[llm]\nmodle = 'x'\n")
    result = run_kiosk("--config", str(config), "models", "list")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "unknown setting 'llm.modle'" in result.stderr


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--k", "0"], "--k 0 is below 1"),
        (["--gate", "strict"], "unknown gate policy 'strict'"),
    ],
)
def test_eval_refuses_impossible_options(option: list[str], message: str, tmp_path: Path) -> None:
    result = run_kiosk("eval", "locomo", "--modality", "palm", *option, "--output", str(tmp_path / "results"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.real_models
def test_models_list_json_reports_required_models_verified() -> None:
    result = run_kiosk("models", "list", "--json")
    assert result.returncode == 0, result.stderr
    states = {s["name"]: s for s in json.loads(result.stdout)}
    for name in ("minilm-l6-int8", "minilm-l6-tokenizer", "facenet-20180408-pb", "qwen2.5-coder-0.5b-instruct"):
        assert states[name]["verified"], states[name]


def test_missing_models_dir_reports_not_pulled(tmp_path: Path) -> None:
    result = run_kiosk("models", "list", "--json", env={"KIOSK_HOME": str(tmp_path / "empty")})
    assert result.returncode == 0
    assert all(not s["present"] and s["problem"] == "not pulled" for s in json.loads(result.stdout))
