"""Choosing a named operating point of a shipped calibration for the evaluation's gate."""

from __future__ import annotations

import pytest

from kiosk.calibration.active import load_calibration
from kiosk.config import PROJECT_ROOT
from kiosk.errors import CalibrationError
from kiosk.eval.models import calibrated_threshold

FACE = load_calibration(PROJECT_ROOT / "calibration" / "face-lfw.json", "face")


def test_default_is_the_calibrations_chosen_rule() -> None:
    assert calibrated_threshold(FACE, None) == (FACE.threshold, FACE.rule)


def test_a_named_operating_point_gives_its_own_threshold() -> None:
    threshold, rule = calibrated_threshold(FACE, "tau_d")
    assert rule == "tau_d"
    assert threshold == FACE.operating_points["tau_d"].threshold != FACE.threshold


def test_an_unknown_operating_point_names_the_known_ones() -> None:
    with pytest.raises(CalibrationError) as error:
        calibrated_threshold(FACE, "far-1e-9")
    assert "tau_d" in error.value.one_line()
