"""The gate's threshold comes from the active calibration, and only if it was made for the active encoder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kiosk.calibration import active_threshold, load_calibration
from kiosk.calibration.run import calibrate_scores
from kiosk.calibration.schema import EncoderInfo
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError

SHA_A = "a" * 64
SHA_B = "b" * 64


def _write(directory: Path, modality: str = "face", sha: str = SHA_A, benchmark: str = "lfw") -> Path:
    rng = np.random.default_rng(0)
    result = calibrate_scores(
        np.clip(rng.normal(0.7, 0.1, 2_000), -1, 1),
        rng.normal(0.1, 0.1, 20_000),
        modality=modality,
        encoder=EncoderInfo(name="facenet", sha256=sha),
        benchmark=benchmark,
        rule="tau_d",
        bootstrap=False,
    )
    json_path, _ = result.apply(directory, plot=False)
    return json_path


@pytest.fixture()
def cal_config(config: KioskConfig, tmp_path: Path) -> KioskConfig:
    config.paths.calibration_dir = tmp_path / "calibration"
    return config


def test_active_threshold_reads_the_configured_file(cal_config: KioskConfig) -> None:
    path = _write(cal_config.paths.calibration_dir)
    calibration = load_calibration(path)
    assert active_threshold(cal_config, "face", SHA_A) == calibration.threshold
    assert calibration.threshold == calibration.figures.tau_d
    assert 0.3 < calibration.threshold < 0.5


def test_a_different_encoder_model_is_refused(cal_config: KioskConfig) -> None:
    _write(cal_config.paths.calibration_dir)
    with pytest.raises(CalibrationError) as caught:
        active_threshold(cal_config, "face", SHA_B)
    line = caught.value.one_line()
    assert "refusing to gate face" in line
    assert "face-lfw.json" in line and SHA_A[:12] in line and SHA_B[:12] in line
    assert "kiosk calibrate face" in line


def test_missing_file_says_what_to_run(cal_config: KioskConfig) -> None:
    with pytest.raises(CalibrationError, match="not found") as caught:
        active_threshold(cal_config, "palm", SHA_A)
    assert "palm-tongji.json" in caught.value.message
    assert "kiosk calibrate palm" in caught.value.hint


def test_a_face_file_configured_for_palm_is_refused(cal_config: KioskConfig) -> None:
    _write(cal_config.paths.calibration_dir)
    cal_config.gate.palm_calibration = "face-lfw.json"
    with pytest.raises(CalibrationError, match="is for face, not palm"):
        active_threshold(cal_config, "palm", SHA_A)


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "unreadable"), (json.dumps({"modality": "face", "threshold": 0.4}), "invalid")],
)
def test_broken_files_are_one_clear_error(cal_config: KioskConfig, content: str, message: str) -> None:
    cal_config.paths.calibration_dir.mkdir(parents=True)
    (cal_config.paths.calibration_dir / "face-lfw.json").write_text(content)
    with pytest.raises(CalibrationError, match=message):
        active_threshold(cal_config, "face", SHA_A)


def test_unknown_modality(cal_config: KioskConfig) -> None:
    with pytest.raises(CalibrationError, match="unknown modality"):
        active_threshold(cal_config, "iris", SHA_A)
