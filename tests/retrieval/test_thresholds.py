"""Adaptive thresholds from the encoder's own similarity distribution, shipped per encoder sha256."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kiosk.config import KioskConfig, RetrievalConfig
from kiosk.errors import CalibrationError
from kiosk.retrieval.results import FamiliaritySignal
from kiosk.retrieval.thresholds import apply, calibration_path, derive, load, text_encoder_identity

REPO = Path(__file__).resolve().parents[2]


def _signals(means: np.ndarray, entropies: np.ndarray) -> list[FamiliaritySignal]:
    return [FamiliaritySignal(float(m), float(h), 15) for m, h in zip(means, entropies, strict=True)]


def test_thresholds_follow_the_score_scale_of_the_encoder() -> None:
    rng = np.random.default_rng(0)
    related = _signals(rng.normal(0.45, 0.06, 2000), rng.uniform(0.0, 2.5, 2000))
    unrelated = _signals(rng.normal(0.27, 0.06, 2000), rng.uniform(0.5, 2.7, 2000))
    theta_low, theta_high, tau = derive(related, unrelated)
    assert theta_low == pytest.approx(0.27, abs=0.01)  # median of the unrelated means
    assert theta_high == pytest.approx(0.45 - 1.645 * 0.06, abs=0.01)  # 5th percentile of the related means
    assert tau == pytest.approx(2.5 * 0.95, abs=0.05)
    # The same questions on an encoder whose cosines run higher: the thresholds move with the scale.
    shifted = derive(
        _signals(rng.normal(0.75, 0.06, 2000), rng.uniform(0.0, 2.5, 2000)),
        _signals(rng.normal(0.57, 0.06, 2000), rng.uniform(0.5, 2.7, 2000)),
    )
    assert shifted[0] == pytest.approx(theta_low + 0.3, abs=0.01)
    assert shifted[1] == pytest.approx(theta_high + 0.3, abs=0.01)
    with pytest.raises(CalibrationError):
        derive(related, [])


def test_theta_high_never_falls_below_theta_low() -> None:
    related = _signals(np.full(50, 0.2), np.ones(50))
    unrelated = _signals(np.full(50, 0.3), np.ones(50))
    theta_low, theta_high, _ = derive(related, unrelated)
    assert theta_high >= theta_low


def test_shipped_calibration_is_the_default_and_belongs_to_the_default_encoder(base_config: KioskConfig) -> None:
    _, sha = text_encoder_identity(base_config)
    path = calibration_path(REPO / "calibration", sha)
    assert path.is_file(), f"no adaptive calibration for the default text encoder: {path}"
    calibration = load(path, sha)
    defaults = RetrievalConfig()
    assert apply(defaults, calibration) == defaults, "RetrievalConfig defaults differ from the shipped calibration"


def test_a_calibration_of_another_encoder_is_refused(base_config: KioskConfig, tmp_path: Path) -> None:
    _, sha = text_encoder_identity(base_config)
    payload = json.loads(calibration_path(REPO / "calibration", sha).read_text())
    payload["encoder_sha256"] = "0" * 64
    foreign = tmp_path / "adaptive.json"
    foreign.write_text(json.dumps(payload))
    with pytest.raises(CalibrationError, match="made for encoder"):
        load(foreign, sha)
    foreign.write_text("{not json")
    with pytest.raises(CalibrationError, match="unreadable"):
        load(foreign, sha)
