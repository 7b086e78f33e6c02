"""`kiosk ask --json` reports the withheld count and what would clear it (issue #38.1), for the owner only."""

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
QUESTION = "What did my cardiologist find?"

pytestmark = pytest.mark.real_models  # the command loads the real text encoder


@pytest.fixture()
def env(config: KioskConfig, text_encoder: object) -> dict[str, str]:
    with open_store(config) as store:
        for name, axis, texts in (
            ("Ana", 0, ["Ana's cat is called Miso", "Ana's cardiologist found a heart murmur"]),
            ("Ben", 1, ["Ben plays the cello"]),
        ):
            user = store.add_user(name)
            store.set_templates(user.id, "face", np.eye(16, dtype=np.float32)[axis][None, :], SHA)
            for day, text in enumerate(texts, start=1):
                note = Note(None, user.id, "face", text, datetime(2024, 5, day, tzinfo=UTC))
                note.embedding = text_encoder.encode_one(text)  # type: ignore[attr-defined]
                note.sensitivity = "health" if "cardiologist" in text else None
                store.add_note(note)
    return {
        "KIOSK_HOME": str(config.paths.data_dir),
        "KIOSK_PATHS__MODELS_DIR": str(config.paths.models),
        "KIOSK_CONFIG": "",
        "KIOSK_SENSITIVE__THRESHOLD_MARGIN": "0.1",
    }


def ask(runner: CliRunner, env: dict[str, str], tmp_path: Path, axis: int, cosine: float, *extra: str) -> str:
    vector = np.zeros(16, dtype=np.float32)
    vector[axis], vector[15] = cosine, np.sqrt(1 - cosine**2)
    path = tmp_path / "probe.npy"
    np.save(path, vector)
    args = ["ask", QUESTION, "--probe-npy", str(path), "--threshold", "0.6", "--no-llm", *extra]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_ask_json_reports_the_step_up_for_a_weak_owner_probe(
    runner: CliRunner, env: dict[str, str], tmp_path: Path
) -> None:
    payload = json.loads(ask(runner, env, tmp_path, 0, 0.65, "--json"))
    assert payload["decision"] == "owner" and payload["withheld"] == 1
    assert payload["step_up"] == {"withheld": 1, "needs": "score >= 0.700", "score": 0.65, "modality": "face"}
    assert "murmur" not in json.dumps(payload)
    assert "step-up: 1 private note(s) of yours would answer this" in ask(runner, env, tmp_path, 0, 0.65)
    strong = json.loads(ask(runner, env, tmp_path, 0, 0.8, "--json"))
    assert strong["step_up"] is None and any("murmur" in note["content"] for note in strong["notes"])


def test_ask_json_has_no_step_up_for_anyone_else(runner: CliRunner, env: dict[str, str], tmp_path: Path) -> None:
    for axis in (1, 5):  # Ben, and a stranger
        text = ask(runner, env, tmp_path, axis, 0.9, "--json")
        payload = json.loads(text)
        assert payload["step_up"] is None and payload["withheld"] == 0
        assert "murmur" not in text and "cardiologist" not in text.replace(QUESTION, "")
