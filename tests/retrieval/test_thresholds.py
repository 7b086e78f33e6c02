"""Adaptive thresholds chosen from calibration outcomes on the encoder's own scale, shipped per encoder sha256."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.retrieval.adaptive import choose_path
from kiosk.retrieval.results import FamiliaritySignal
from kiosk.retrieval.thresholds import (
    NEVER,
    Outcome,
    adaptive_recall,
    apply,
    calibration_path,
    load,
    select,
    text_encoder_identity,
)
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning

REPO = Path(__file__).resolve().parents[2]


def _outcomes(rng: np.random.Generator, n: int, shift: float = 0.0) -> list[Outcome]:
    """Questions whose recollection gain depends on the signal: it helps only below mean 0.3 (+ shift),
    on every category, and costs recall above it."""
    out = []
    for i in range(n):
        mean = float(rng.normal(0.42, 0.08))
        gain = 0.2 if mean < 0.3 else -0.1
        out.append(Outcome(FamiliaritySignal(mean + shift, float(rng.uniform(0.0, 2.5)), 15), f"c{i % 3}", gain))
    return out


def test_recollection_is_chosen_only_where_it_gained_and_thresholds_follow_the_scale() -> None:
    rng = np.random.default_rng(0)
    outcomes = _outcomes(rng, 3000)
    rule = select(outcomes, 15)
    familiarity = [0.5] * len(outcomes)
    assert adaptive_recall(outcomes, familiarity, rule) > 0.5  # adaptive beats familiarity where it can
    chosen = [o for o in outcomes if rule.recollects(o.signal)]
    # Thresholds sit on quantiles of the signals, so some losing questions near the cut may come along, but every
    # category gains and most of the questions recollection helps are sent to it.
    assert all(sum(o.gain for o in chosen if o.category == c) > 0 for c in ("c0", "c1", "c2"))
    assert sum(rule.recollects(o.signal) for o in outcomes if o.gain > 0) >= 0.8 * sum(o.gain > 0 for o in outcomes)
    assert 0.25 < rule.theta_low < 0.33
    # The same questions on an encoder whose cosines run higher: the thresholds move with the scale.
    shifted = select(_outcomes(np.random.default_rng(0), 3000, shift=0.3), 15)
    assert shifted.theta_low == pytest.approx(rule.theta_low + 0.3, abs=1e-3)
    with pytest.raises(CalibrationError):
        select([], 15)


def test_recollection_that_never_gains_is_never_chosen() -> None:
    rng = np.random.default_rng(1)
    outcomes = [
        Outcome(FamiliaritySignal(float(m), float(h), 15), "c", float(g))
        for m, h, g in zip(
            rng.normal(0.45, 0.06, 500), rng.uniform(0, 2.7, 500), rng.choice([0.0, -0.1], 500), strict=True
        )
    ]
    rule = select(outcomes, 15)
    assert rule.theta_high == NEVER
    assert not any(rule.recollects(o.signal) for o in outcomes)
    defaults = RetrievalTuning(theta_low=rule.theta_low, theta_high=rule.theta_high, tau_entropy=rule.tau_entropy)
    assert choose_path(FamiliaritySignal(-1.0, 2.7, 15), defaults) == "familiarity"


def test_a_rule_that_gains_overall_but_loses_on_one_category_is_refused() -> None:
    low = FamiliaritySignal(0.2, 1.0, 15)
    high = FamiliaritySignal(0.5, 1.0, 15)
    outcomes = [Outcome(low, "multi-hop", 0.5)] * 10 + [Outcome(low, "temporal", -0.1)] * 10
    outcomes += [Outcome(high, "multi-hop", -0.1), Outcome(high, "temporal", -0.1)] * 20
    rule = select(outcomes, 15)
    assert not any(rule.recollects(o.signal) for o in outcomes)


def test_shipped_calibration_is_the_default_and_belongs_to_the_default_encoder(base_config: KioskConfig) -> None:
    _, sha = text_encoder_identity(base_config)
    path = calibration_path(REPO / "calibration", sha)
    assert path.is_file(), f"no adaptive calibration for the default text encoder: {path}"
    calibration = load(path, sha)
    assert apply(DEFAULT_TUNING, calibration) == DEFAULT_TUNING, "the tuning differs from the shipped calibration"


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
