"""Threshold calibration per modality and benchmark.

This package root stays light (no matplotlib/scipy import) because the gate imports `active_threshold`
at start-up; the numerics live in `kiosk.calibration.scores`, the runner in `kiosk.calibration.run`.
"""

from kiosk.calibration.active import active_calibration, active_threshold, calibration_path, load_calibration
from kiosk.calibration.schema import Calibration

__all__ = ["Calibration", "active_calibration", "active_threshold", "calibration_path", "load_calibration"]
