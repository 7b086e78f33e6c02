"""The admin calibration tab's site button: a proposal from the enrolled people, shown with what the data can show."""

from __future__ import annotations

from PySide6.QtCore import Qt

from .test_screens import unlock


def test_site_button_proposes_shows_the_caveats_and_applies_the_far_point(qtbot, make_window, fake) -> None:  # type: ignore[no-untyped-def]
    window = make_window(fake)
    unlock(qtbot, window)
    admin = window.admin
    calibration = admin.calibration_tab
    calibration.site_target.setCurrentText("1e-4")
    with qtbot.waitSignal(admin.calibration_ready, timeout=10_000):
        qtbot.mouseClick(calibration.site_button, Qt.MouseButton.LeftButton)
    assert fake.site_target == 1e-4
    assert calibration.chosen_rule() == "far"
    assert "rule of three" in calibration.cal_status.text() and "proposed tau" in calibration.cal_status.text()
    assert calibration.site_button.isEnabled() and calibration.apply_button.isEnabled()
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what != "users-listed"):
        qtbot.mouseClick(calibration.apply_button, Qt.MouseButton.LeftButton)
    assert fake.applied == ("face", "far")
    actions = [e["action"] for e in window.ctx.audit.entries()]
    assert actions[-3:] == ["site-calibration-run", "calibration-done", "calibration-applied"]
