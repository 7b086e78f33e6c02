"""The sensitive-threshold table of bench/results/sensitive.md is read from the shipped calibration files."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.bench_sensitive import threshold_section
from kiosk.calibration.sensitive import SensitiveCalibration, sensitive_path
from kiosk.config import PROJECT_ROOT

SHIPPED = PROJECT_ROOT / "calibration"


def test_the_table_reports_each_shipped_frame_count_with_its_goal() -> None:
    figures, markdown = threshold_section(SHIPPED)
    face = SensitiveCalibration.model_validate_json(sensitive_path(SHIPPED, "face").read_text(encoding="utf-8"))
    for point in face.trade_off:
        assert figures[f"face.lfw3d.fused_{point.frames}.frr"] == point.frr.value
        assert figures[f"face.lfw3d.fused_{point.frames}.far"] == point.far.value
    live = next(line for line in markdown.splitlines() if "face, LFW3D" in line and "(live fusion)" in line)
    assert f"{face.frames_fused} (live fusion)" in live
    assert ("| met |" in live) == (face.frr.value <= 0.05)
    assert any(key.startswith("palm.tongji.fused_") for key in figures)


def test_a_modality_without_a_file_is_left_out(tmp_path: Path) -> None:
    shutil.copy(sensitive_path(SHIPPED, "face"), sensitive_path(tmp_path, "face"))
    figures, markdown = threshold_section(tmp_path)
    assert figures and all(key.startswith("face.") for key in figures)
    assert "palm," not in markdown
