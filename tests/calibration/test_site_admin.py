"""The admin screen's site calibration (kiosk.app.admin): a proposal it may apply, never under the calibration."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kiosk.app.admin import Admin
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.memory import SqliteStore

from .fakes import FAKE_SHA
from .test_site import active_calibration_at, enrolled, save_test_cohort


def admin_for(config: KioskConfig, store: SqliteStore, tmp_path: Path) -> Admin:
    config.paths.calibration_dir = tmp_path / "calibration"
    config.paths.calibration_dir.mkdir()
    save_test_cohort(config.paths.calibration_dir, 400)
    for user, rows in enrolled(8, 4).items():
        store.set_templates(store.add_user(f"person {user}").id, "face", rows, FAKE_SHA)
    assistant = SimpleNamespace(store=store, thresholds={"face": 0.9})
    live = SimpleNamespace(face=SimpleNamespace(model_sha256=FAKE_SHA), threshold_problem=None)
    return Admin(config, cast(Any, assistant), cast(Any, live), cast(Any, None), owns_llm=False)


def test_admin_site_calibration_proposes_and_applies_above_the_calibration(config: KioskConfig, tmp_path: Path) -> None:
    with SqliteStore(":memory:") as store:
        admin = admin_for(config, store, tmp_path)
        active_calibration_at(tmp_path, -0.9)
        steps: list[str] = []
        view = admin.run_site_calibration("face", 1e-2, lambda _fraction, message: steps.append(message))
        assert view.default_rule == "far" and steps
        assert any("proposed tau" in note for note in view.notes)
        assert view.counts["impostor"] == 400 * 8 + 32 * 7
        tau = admin.apply_calibration(view, "far")
        assert tau == pytest.approx(view.thresholds["far"])
        assert admin.assistant.thresholds == {"face": tau}
        assert (tmp_path / "calibration" / "face-site.json").is_file()


def test_admin_never_applies_a_site_proposal_under_the_calibration(config: KioskConfig, tmp_path: Path) -> None:
    with SqliteStore(":memory:") as store:
        admin = admin_for(config, store, tmp_path)
        active_calibration_at(tmp_path, 0.999)
        view = admin.run_site_calibration("face", 1e-2, lambda _fraction, _message: None)
        assert any("below the active calibration" in note for note in view.notes)
        with pytest.raises(CalibrationError, match="under the active calibration") as refused:
            admin.apply_calibration(view, "far")
        assert "--below-calibration" in refused.value.hint
        assert not (tmp_path / "calibration" / "face-site.json").exists()
        assert admin.assistant.thresholds == {"face": 0.9}
