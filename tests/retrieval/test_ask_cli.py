"""`kiosk ask`: identity decision, gate scores, path, notes, timings; bad input gives one clear line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kiosk.cli import app
from kiosk.config import KioskConfig
from kiosk.memory import Note
from kiosk.memory.open import open_store

SHA = "d" * 64

pytestmark = pytest.mark.real_models  # the command loads the real text encoder


@pytest.fixture()
def env(config: KioskConfig, text_encoder: object) -> dict[str, str]:
    with open_store(config) as store:
        for name, axis, texts in (
            ("Ana", 0, ["Ana's cat is called Miso", "Ana works as a nurse", "Ana's cardiologist found a heart murmur"]),
            ("Ben", 1, ["Ben plays the cello"]),
        ):
            user = store.add_user(name)
            store.set_templates(user.id, "face", np.eye(16, dtype=np.float32)[axis][None, :], SHA)
            for day, text in enumerate(texts, start=1):
                store.add_note(
                    Note(
                        id=None,
                        owner_id=user.id,
                        modality="face",
                        content=text,
                        timestamp=datetime(2024, 5, day, tzinfo=UTC),
                        embedding=text_encoder.encode_one(text),  # type: ignore[attr-defined]
                        source_ref=f"{name}:{day}",
                        sensitivity="health" if "cardiologist" in text else None,
                    )
                )
    return {
        "KIOSK_HOME": str(config.paths.data_dir),
        "KIOSK_PATHS__MODELS_DIR": str(config.paths.models),
        "KIOSK_CONFIG": "",
    }


def save_probe(tmp_path: Path, vector: np.ndarray) -> Path:
    path = tmp_path / "probe.npy"
    np.save(path, vector.astype(np.float32))
    return path


def test_ask_json_reports_identity_scores_path_notes_and_timings(
    runner: CliRunner, env: dict[str, str], tmp_path: Path
) -> None:
    probe = save_probe(tmp_path, np.eye(16)[0] + 0.1)
    result = runner.invoke(
        app,
        ["ask", "What is my cat called?", "--probe-npy", str(probe), "--threshold", "0.6", "--no-llm", "--json"],
        env=env,
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["decision"] == "owner" and payload["identity"]["name"] == "Ana"
    assert set(payload["gate"]["scores"]) == {"1", "2"} and payload["gate"]["threshold"] == 0.6
    assert payload["path"] == "familiarity"
    assert {note["source_ref"] for note in payload["notes"]} == {"Ana:1", "Ana:2", "Ana:3"}
    assert all({"id", "content", "source_ref", "similarity", "timestamp"} <= set(n) for n in payload["notes"])
    assert {"gate", "encode", "retrieve", "total"} <= set(payload["timings_ms"])


def test_ask_stranger_falls_back_in_human_output(runner: CliRunner, env: dict[str, str], tmp_path: Path) -> None:
    probe = save_probe(tmp_path, np.eye(16)[5])
    result = runner.invoke(
        app, ["ask", "What is my cat called?", "--probe-npy", str(probe), "--threshold", "0.6", "--no-llm"], env=env
    )
    assert result.exit_code == 0, result.output
    assert "not recognised" in result.stdout and "decision fallback" in result.stdout
    assert "Miso" not in result.stdout


def test_ask_dates_the_notes_in_the_terminals_time_zone(runner: CliRunner, env: dict[str, str], tmp_path: Path) -> None:
    """Ana's notes were said at midnight UTC on 1-3 May 2024: in UTC-5 that is the evening before."""
    probe = save_probe(tmp_path, np.eye(16)[0] + 0.1)
    args = ["ask", "What is my cat called?", "--probe-npy", str(probe), "--threshold", "0.6", "--no-llm"]
    result = runner.invoke(app, args, env={**env, "KIOSK_UI__TIME_ZONE": "America/New_York"})
    assert result.exit_code == 0, result.output
    assert "2024-04-30: Ana's cat is called Miso" in result.stdout
    assert "2024-05-01: Ana's cat" not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--probe-npy", "missing.npy"], "does not exist"),
        (["--probe-npy", "{wrong_dim}"], "dimensions"),
        (["--probe-npy", "{zeros}"], "zero vector"),
        (["--probe-npy", "{ok}", "--policy", "loose"], "unknown gate policy"),
        (["--probe-npy", "{ok}", "--face", "face.jpg"], "give --probe-npy alone"),
    ],
)
def test_ask_bad_input_is_one_clear_line(
    runner: CliRunner, env: dict[str, str], tmp_path: Path, args: list[str], message: str
) -> None:
    files = {
        "{wrong_dim}": np.ones(15),
        "{zeros}": np.zeros(16),
        "{ok}": np.eye(16)[0],
    }
    resolved = []
    for arg in args:
        if arg in files:
            path = tmp_path / f"{arg.strip('{}')}.npy"
            np.save(path, files[arg])
            arg = str(path)
        resolved.append(arg)
    result = runner.invoke(app, ["ask", "hello?", *resolved, "--threshold", "0.6", "--no-llm"], env=env)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output


def test_ask_empty_question(runner: CliRunner, env: dict[str, str], tmp_path: Path) -> None:
    probe = save_probe(tmp_path, np.eye(16)[0])
    result = runner.invoke(app, ["ask", "  ", "--probe-npy", str(probe), "--threshold", "0.6", "--no-llm"], env=env)
    assert result.exit_code == 2 and "question is empty" in result.stderr


def test_ask_withholds_a_sensitive_note_below_the_stricter_threshold(
    runner: CliRunner, env: dict[str, str], tmp_path: Path
) -> None:
    between = np.zeros(16)
    between[0], between[15] = 0.65, np.sqrt(1 - 0.65**2)  # passes tau 0.6, not tau + 0.1
    args = ["ask", "What did my cardiologist find?", "--threshold", "0.6", "--no-llm"]
    weak = runner.invoke(app, [*args, "--probe-npy", str(save_probe(tmp_path, between))], env=env)
    assert weak.exit_code == 0, weak.output
    assert "murmur" not in weak.stdout and "1 of the best matches withheld" in weak.stdout
    strong = runner.invoke(app, [*args, "--probe-npy", str(save_probe(tmp_path, np.eye(16)[0])), "--json"], env=env)
    notes = json.loads(strong.stdout)["notes"]
    assert any(n["sensitivity"] == "health" and "murmur" in n["content"] for n in notes)
