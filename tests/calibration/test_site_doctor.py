"""`kiosk doctor` on calibrations: too few impostor trials for the target, and the cohort site calibration needs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kiosk import doctor
from kiosk.calibration.active import load_calibration
from kiosk.calibration.run import calibrate_scores
from kiosk.calibration.schema import Calibration, EncoderInfo
from kiosk.config import PROJECT_ROOT, KioskConfig

from .fakes import FAKE_SHA

SHIPPED = PROJECT_ROOT / "calibration"


def small_calibration(impostors: int, target_far: float) -> Calibration:
    rng = np.random.default_rng(0)
    return calibrate_scores(
        np.clip(rng.normal(0.7, 0.1, 200), -1, 1),
        np.clip(rng.normal(0.1, 0.1, impostors), -1, 1),
        modality="face",
        encoder=EncoderInfo(name="pixels", sha256=FAKE_SHA),
        benchmark="lfw",
        target_far=target_far,
        bootstrap=False,
    ).calibration


def test_too_few_impostor_trials_for_the_target_warn() -> None:
    checks = doctor.calibration_trial_checks(small_calibration(5_000, 1e-4))
    assert [c.status for c in checks] == ["warn"]
    assert "5,000 impostor trials" in checks[0].message and "30,000" in checks[0].message
    assert "--site" in checks[0].fix
    assert doctor.calibration_trial_checks(small_calibration(5_000, 1e-3)) == []


@pytest.mark.parametrize("name", ["face-lfw.json", "palm-tongji.json"])
def test_the_shipped_calibrations_have_trials_enough(name: str) -> None:
    assert doctor.calibration_trial_checks(load_calibration(SHIPPED / name)) == []


def test_doctor_warns_of_few_trials_and_a_missing_cohort(
    config: KioskConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.paths.calibration_dir = tmp_path / "calibration"
    config.paths.calibration_dir.mkdir()
    config.capture.palm_source = None
    (config.paths.calibration_dir / "face-lfw.json").write_text(small_calibration(5_000, 1e-4).model_dump_json())
    monkeypatch.setattr(doctor, "_embedder_sha", lambda _config, _modality: FAKE_SHA)
    checks = {c.name: c for c in doctor.check_calibrations(config)}
    assert checks["calibration face"].status == "ok"
    assert checks["calibration face trials"].status == "warn"
    assert checks["cohort face"].status == "warn" and "site calibration unavailable" in checks["cohort face"].message


def test_the_shipped_cohort_is_found_for_the_shipped_encoders(config: KioskConfig) -> None:
    for modality, name in (("face", "face-lfw.json"), ("palm", "palm-tongji.json")):
        sha = load_calibration(SHIPPED / name).encoder.sha256
        config.paths.calibration_dir = SHIPPED
        [check] = doctor.cohort_checks(config, modality, sha)
        assert check.status == "ok" and "impostor templates" in check.message
