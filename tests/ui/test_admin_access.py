"""The admin screen asks for the PIN and then a liveness check (scripted by FakeServices), offscreen Qt.

The decisions are the core's (tests/security/test_admin_access.py); here: what the screen shows and calls.
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from kiosk.config import KioskConfig
from kiosk.ui.screens.base import ADMIN, MAIN

from .conftest import save_screenshot

PIN = "2580"


def click(qtbot, widget) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def enter_pin(window) -> None:  # type: ignore[no-untyped-def]
    window.ctx.admin_pin.set_pin(PIN)
    window.show_screen(ADMIN)
    window.admin.gate.pad.type_pin(PIN)


def challenges(window) -> list[tuple[object, object]]:  # type: ignore[no-untyped-def]
    return [(e.get("purpose"), e["ok"]) for e in window.ctx.audit.entries() if e["action"] == "admin-challenge"]


def pin_failures(config: KioskConfig) -> int:
    return int(json.loads((config.paths.data_dir / "admin_pin.json").read_text())["backoff"]["failures"])


def test_the_pin_then_the_liveness_check_unlocks(qtbot, make_window, fake, ui_config) -> None:  # type: ignore[no-untyped-def]
    fake.challenge_script = ["waiting"] * 4  # the admin has not blinked yet for a few polls
    window = make_window(fake)
    admin = window.admin
    window.show_screen(ADMIN)
    assert "blink or head-turn check" in admin.gate.note.text()
    enter_pin(window)
    assert admin.stack.currentWidget() is admin.check and not admin.unlocked
    qtbot.waitUntil(lambda: admin.check.prompt.text() == "Please blink once", timeout=5000)
    assert "liveness check" in admin.check.intro.text()
    save_screenshot(window, "fake-admin-liveness-check")
    qtbot.waitUntil(lambda: admin.unlocked, timeout=5000)
    assert admin.stack.currentWidget() is admin.tabs
    assert fake.challenge_polls >= 5 and fake.challenge_purposes == ["unlock"]
    assert challenges(window) == [("unlock", True)]


def test_a_failed_check_returns_to_the_pin_is_audited_and_backs_off(qtbot, make_window, fake, ui_config) -> None:  # type: ignore[no-untyped-def]
    fake.challenge_script = ["failed"] * ui_config.ui.admin_pin_attempts
    window = make_window(fake)
    admin = window.admin
    enter_pin(window)
    qtbot.waitUntil(lambda: admin.stack.currentWidget() is admin.gate, timeout=5000)
    assert not admin.unlocked
    assert "No live person confirmed" in admin.gate.message.text() and "2 attempts left" in admin.gate.message.text()
    assert pin_failures(ui_config) == 1
    save_screenshot(window, "fake-admin-liveness-failed")
    for _ in range(ui_config.ui.admin_pin_attempts - 1):
        admin.gate.pad.type_pin(PIN)
        qtbot.waitUntil(lambda: admin.stack.currentWidget() is admin.gate, timeout=5000)
    assert "Locked for 30 s" in admin.gate.message.text()
    admin.gate.pad.type_pin(PIN)  # the right PIN while locked: no check is even started
    assert "Try again in" in admin.gate.message.text() and not admin.unlocked
    assert len(fake.challenge_purposes) == ui_config.ui.admin_pin_attempts
    assert challenges(window) == [("unlock", False)] * ui_config.ui.admin_pin_attempts


def test_cancelling_or_leaving_the_check_counts_as_a_failure(qtbot, make_window, fake, ui_config) -> None:  # type: ignore[no-untyped-def]
    fake.challenge_script = ["waiting"] * 1000
    window = make_window(fake)
    admin = window.admin
    enter_pin(window)
    qtbot.waitUntil(lambda: admin.check.running and fake.challenge_polls > 0, timeout=5000)
    click(qtbot, admin.check.cancel_button)
    assert admin.stack.currentWidget() is admin.gate and "cancelled" in admin.gate.message.text()
    admin.gate.pad.type_pin(PIN)
    qtbot.waitUntil(lambda: admin.check.running, timeout=5000)
    window.show_screen(MAIN)
    assert not admin.check.running and pin_failures(ui_config) == 2
    assert challenges(window) == [("unlock", False), ("unlock", False)]


def test_a_palm_only_terminal_unlocks_with_the_pin_and_says_so(qtbot, make_window, fake, ui_config) -> None:  # type: ignore[no-untyped-def]
    ui_config.capture.face_source = ""
    ui_config.capture.palm_source = "/dev/video2"
    window = make_window(fake)
    window.show_screen(ADMIN)
    assert "Palm-only terminal" in window.admin.gate.note.text()
    enter_pin(window)
    assert window.admin.unlocked and fake.challenge_purposes == []


def test_removing_a_user_after_the_check_went_stale_asks_again(qtbot, make_window, fake, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("kiosk.security.admin_access.CHALLENGE_FRESH_S", 0.001)
    window = make_window(fake)
    admin = window.admin
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "users-listed"):
        enter_pin(window)
    admin.tabs.setCurrentIndex(1)
    admin.users.setCurrentRow(1)
    fake.challenge_script = ["waiting", "failed"]
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "remove-user-denied"):
        click(qtbot, admin.remove_button)
        click(qtbot, admin.confirm_remove)
        assert admin.stack.currentWidget() is admin.check and "remove a user" in admin.check.intro.text()
    assert 2 in fake.users and admin.unlocked and "No live person confirmed" in admin.users_status.text()
    admin.users.setCurrentRow(1)
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "users-listed"):
        click(qtbot, admin.remove_button)
        click(qtbot, admin.confirm_remove)
    assert 2 not in fake.users
    assert fake.challenge_purposes == ["unlock", "remove-user", "remove-user"]
    assert challenges(window) == [("unlock", True), ("remove-user", False), ("remove-user", True)]


def test_a_terminal_that_cannot_run_the_check_says_how_to_fix_it(qtbot, make_window, fake, ui_config) -> None:  # type: ignore[no-untyped-def]
    ui_config.security.admin_challenge = "on"
    fake.challenge_off = True
    window = make_window(fake)
    enter_pin(window)
    admin = window.admin
    qtbot.waitUntil(lambda: "pad.enabled" in admin.gate.message.text(), timeout=5000)
    assert not admin.unlocked and "security.admin_challenge = off" in admin.gate.message.text()
    assert pin_failures(ui_config) == 0  # a set-up problem, not a failed attempt
