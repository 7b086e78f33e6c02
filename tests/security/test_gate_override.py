"""`kiosk ask --threshold` cannot lower the gate under the calibration unnoticed (issue #34.7).

`kiosk ask --threshold -1 --policy threshold` with an unenrolled face returned everyone's notes, sensitive ones
included, and nothing recorded it. A threshold under the active calibration's tau now needs the admin flag
`--below-calibration` (refused otherwise, in one line naming it) and is written to the audit log; every
question's gate decision is audited (who, modality, score, decision), never its text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kiosk.calibration.active import active_calibration, calibration_path
from kiosk.cli import app
from kiosk.config import KioskConfig
from kiosk.memory import EMBEDDING_DIM, Note
from kiosk.memory.open import open_store
from kiosk.security.audit import audit_log_for

QUESTION = "What is the locker code?"
SECRET = "My locker code is 7741"


class FixedEncoder:
    """Every text is the same unit vector: retrieval runs and no model is loaded."""

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(sentences), EMBEDDING_DIM), np.float32)
        out[:, 0] = 1.0
        return out

    def encode_one(self, sentence: str) -> np.ndarray:
        return self.encode([sentence])[0]


@pytest.fixture()
def terminal(config: KioskConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], Path]:
    """A terminal with the shipped face calibration, Colin enrolled with a sensitive note, and the probe file of
    a face nobody enrolled."""
    monkeypatch.setattr("kiosk.text.load_text_encoder", lambda config: FixedEncoder())
    sha = json.loads(calibration_path(config, "face").read_text(encoding="utf-8"))["encoder"]["sha256"]
    with open_store(config) as store:
        colin = store.add_user("Colin")
        store.set_templates(colin.id, "face", np.eye(8, dtype=np.float32)[:1], sha)
        note = Note(
            None, colin.id, "face", SECRET, datetime(2024, 1, 1, tzinfo=UTC), embedding=FixedEncoder().encode_one("")
        )
        note.sensitivity = "credentials"
        store.add_note(note)
    probe_file = tmp_path / "stranger.npy"
    np.save(probe_file, np.eye(8, dtype=np.float32)[5])
    env = {
        "KIOSK_HOME": str(config.paths.data_dir),
        "KIOSK_PATHS__MODELS_DIR": str(config.paths.models),
        "KIOSK_CONFIG": "",
    }
    return env, probe_file


def ask(runner: CliRunner, env: dict[str, str], probe_file: Path, *extra: str) -> tuple[int, str]:
    args = ["ask", QUESTION, "--probe-npy", str(probe_file), "--no-llm", "--json", *extra]
    result = runner.invoke(app, args, env=env)
    return result.exit_code, result.output


def test_a_threshold_under_the_calibration_is_refused_without_the_admin_flag(
    runner: CliRunner, terminal: tuple[dict[str, str], Path], config: KioskConfig
) -> None:
    env, probe_file = terminal
    code, output = ask(runner, env, probe_file, "--threshold", "-1", "--policy", "threshold")
    assert code == 2, output
    assert "--below-calibration" in output and len(output.strip().splitlines()) == 1
    assert "7741" not in output
    assert not [e for e in audit_log_for(config).entries() if e["action"] == "gate-decision"]  # nothing was asked


def test_the_admin_override_is_audited_with_every_gate_decision_and_no_text(
    runner: CliRunner, terminal: tuple[dict[str, str], Path], config: KioskConfig
) -> None:
    env, probe_file = terminal
    code, output = ask(runner, env, probe_file, "--threshold", "-1", "--policy", "threshold", "--below-calibration")
    assert code == 0, output
    assert json.loads(output)["decision"] == "owner"  # the admin asked for it, and it is on record
    entries = audit_log_for(config).entries()
    override = [e for e in entries if e["action"] == "gate-override"]
    tau = active_calibration(config, "face", _sha(config)).threshold
    assert override == [
        {
            "at": override[0]["at"],
            "action": "gate-override",
            "modality": "face",
            "threshold": -1.0,
            "calibrated_threshold": tau,
            "policy": "threshold",
            "source": "kiosk ask --below-calibration",
        }
    ]
    decisions = [e for e in entries if e["action"] == "gate-decision"]
    assert len(decisions) == 1  # one question, one verification on record
    assert decisions[0]["decision"] == "owner" and decisions[0]["modality"] == "face"
    assert decisions[0]["threshold"] == -1.0 and isinstance(decisions[0]["best_score"], float)
    raw = "".join(path.read_text(encoding="utf-8") for path in audit_log_for(config).files())
    assert "locker" not in raw and "7741" not in raw


def test_an_ordinary_question_is_audited_and_a_stricter_threshold_needs_no_flag(
    runner: CliRunner, terminal: tuple[dict[str, str], Path], config: KioskConfig
) -> None:
    env, probe_file = terminal
    code, output = ask(runner, env, probe_file)
    assert code == 0, output
    assert json.loads(output)["notes"] == []
    code, output = ask(runner, env, probe_file, "--threshold", "0.99")
    assert code == 0, output
    decisions = [e for e in audit_log_for(config).entries() if e["action"] == "gate-decision"]
    assert [(e["decision"], e["user_id"]) for e in decisions] == [("fallback", None), ("fallback", None)]
    assert not [e for e in audit_log_for(config).entries() if e["action"] == "gate-override"]


def _sha(config: KioskConfig) -> str:
    return str(json.loads(calibration_path(config, "face").read_text(encoding="utf-8"))["encoder"]["sha256"])
