"""Enrollment wizard, own-memory screen and admin screen against scripted services."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import numpy as np
from PySide6.QtCore import Qt

from kiosk.app.views import EnrollSample, NoteView
from kiosk.ui.screens.base import ADMIN, ENROLL, MAIN, MEMORY
from kiosk.ui.screens.enroll import FACE_POSES, PALM_NOT_ENROLLED, POSE_CHANGE_MS

from .conftest import save_screenshot
from .fakes import UNKNOWN

GOOD = EnrollSample(True, None, np.ones(4, np.float32) / 2)


def click(qtbot, widget) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


# --- enrollment -------------------------------------------------------------------------------------
def test_enrollment_wizard_shows_live_hints_and_enrolls(qtbot, make_window, fake) -> None:
    fake.sample_script = [
        EnrollSample(False, "Come a little closer"),
        GOOD,
        EnrollSample(False, "Hold still for a moment"),
        GOOD,
        GOOD,
        GOOD,
        GOOD,
    ]
    window = make_window(fake)
    click(qtbot, window.main.enroll_button)
    enroll = window.enroll
    assert window.current == ENROLL and enroll.step == "consent"
    save_screenshot(window, "fake-enroll-consent")
    click(qtbot, enroll.agree_button)
    qtbot.waitUntil(lambda: enroll.hint.text() == "Come a little closer", timeout=5000)
    hints: list[str] = []
    qtbot.waitUntil(lambda: hints.append(enroll.hint.text()) or enroll.step == "name", timeout=10_000)
    assert "Hold still for a moment" in hints
    assert len(enroll.samples) == 5
    for char in "Grace":
        enroll_keyboard = enroll.findChild(type(window.main.keyboard))
        enroll_keyboard.press(char)
    assert enroll.name_input.text() == "Grace"
    with qtbot.waitSignal(enroll.enrolled, timeout=5000) as blocker:
        click(qtbot, enroll.save_button)
    assert blocker.args[0].name == "Grace" and "Grace" in fake.users.values()
    assert enroll.step == "done" and "Welcome, Grace" in enroll.done_text.text()
    save_screenshot(window, "fake-enroll-done")


def enrol_grace(qtbot, window) -> str:  # type: ignore[no-untyped-def]
    enroll = window.enroll
    click(qtbot, window.main.enroll_button)
    click(qtbot, enroll.agree_button)
    qtbot.waitUntil(lambda: enroll.step == "name", timeout=15_000)
    for char in "Grace":
        enroll.findChild(type(window.main.keyboard)).press(char)
    with qtbot.waitSignal(enroll.enrolled, timeout=5000):
        click(qtbot, enroll.save_button)
    return str(enroll.done_text.text())


def test_a_face_and_palm_terminal_says_when_the_palm_was_not_enrolled(  # type: ignore[no-untyped-def]
    qtbot, make_window, fake, ui_config, monkeypatch
) -> None:
    monkeypatch.setattr("kiosk.ui.screens.enroll.POSE_CHANGE_MS", 0)
    ui_config.capture.palm_source = "/dev/video2"  # a scanner beside the camera; the fake enrols the face alone
    done = enrol_grace(qtbot, make_window(fake))
    assert "Welcome, Grace" in done and PALM_NOT_ENROLLED in done


def test_a_face_only_terminal_does_not_speak_of_a_palm(qtbot, make_window, fake, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("kiosk.ui.screens.enroll.POSE_CHANGE_MS", 0)
    done = enrol_grace(qtbot, make_window(fake))
    assert "Welcome, Grace" in done and "palm" not in done


def test_enrollment_asks_for_each_head_pose_and_waits_for_the_turn(qtbot, make_window, fake) -> None:
    fake.sample_script = [GOOD] * 5
    window = make_window(fake)
    click(qtbot, window.main.enroll_button)
    enroll = window.enroll
    click(qtbot, enroll.agree_button)
    asked_at: dict[str, float] = {}
    sampled_at: dict[int, float] = {}

    def watch() -> bool:
        now = time.monotonic()
        asked_at.setdefault(enroll.hint.text(), now)
        sampled_at.setdefault(len(enroll.samples), now)
        return enroll.step != "capture"

    qtbot.waitUntil(watch, timeout=15_000)
    assert len(enroll.samples) == 5
    assert [pose for pose in asked_at if pose in FACE_POSES[2:]] == list(FACE_POSES[2:])
    for index, pose in enumerate(FACE_POSES[2:], start=3):
        # The frame for a pose is taken only after the person had time to turn.
        assert sampled_at[index] - asked_at[pose] >= 0.9 * POSE_CHANGE_MS / 1000, (pose, asked_at, sampled_at)


def test_enrollment_asks_for_the_liveness_challenge_before_the_name(qtbot, make_window, fake) -> None:
    fake.sample_script = [GOOD] * 5
    fake.challenge_script = ["waiting"] * 4  # the person has not blinked yet for a few polls
    window = make_window(fake)
    window.show_screen(ENROLL)
    enroll = window.enroll
    click(qtbot, enroll.agree_button)
    qtbot.waitUntil(lambda: enroll.hint.text() == "Please blink once", timeout=10_000)
    assert enroll.step == "capture"
    qtbot.waitUntil(lambda: enroll.step == "name", timeout=10_000)
    assert fake.challenge_polls >= 5 and enroll.challenge_state == "passed"


def test_a_failed_liveness_challenge_is_retried_then_enrollment_stops(qtbot, make_window, fake) -> None:
    fake.sample_script = [GOOD] * 5
    fake.challenge_script = ["failed"] * 3
    window = make_window(fake)
    window.show_screen(ENROLL)
    enroll = window.enroll
    click(qtbot, enroll.agree_button)
    qtbot.waitUntil(lambda: "could not confirm a live person" in enroll.hint.text(), timeout=10_000)
    assert enroll.step == "capture"  # never reaches the name page: nothing can be enrolled
    assert fake.challenge_polls == 3


def test_enrollment_needs_a_name_and_reports_store_errors(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    window.show_screen(ENROLL)
    enroll = window.enroll
    enroll.samples = [GOOD, GOOD]  # too few: the (fake) core refuses, the wizard says why
    enroll._go(2)
    click(qtbot, enroll.save_button)
    assert "type your name" in enroll.name_error.text()
    enroll.name_input.setText("Grace")
    click(qtbot, enroll.save_button)
    qtbot.waitUntil(lambda: "too few good frames" in enroll.name_error.text(), timeout=5000)
    assert enroll.step == "name"


# --- own memories -----------------------------------------------------------------------------------
def test_memory_screen_lists_only_own_notes_deletes_and_forgets(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    window.main.type_with_keyboard("where does my sister live?")
    with qtbot.waitSignal(window.main.answer_done, timeout=5000):
        window.main.send()
    memory = window.memory
    with qtbot.waitSignal(memory.changed, timeout=5000) as blocker:
        click(qtbot, window.main.memory_button)
    assert blocker.args[0] == "loaded"
    assert [n.content for n in memory.notes] == [n.content for n in fake.notes[1]]
    assert "Bob keeps bees." not in [n.content for n in memory.notes]
    save_screenshot(window, "fake-memory")
    delete = memory.findChild(type(window.main.send_button), "delete-1")
    with qtbot.waitSignal(memory.changed, timeout=5000):
        click(qtbot, delete)
    assert [n.id for n in memory.notes] == [2] and [n.id for n in fake.notes[1]] == [2]
    click(qtbot, memory.forget_button)
    assert memory.confirm.isVisible()  # nothing is deleted before the confirmation
    assert 1 in fake.users
    with qtbot.waitSignal(memory.changed, timeout=5000) as blocker:
        click(qtbot, memory.confirm_yes)
    assert blocker.args[0] == "forgotten"
    assert not window.main.conversation.bubbles
    assert 1 not in fake.users and 1 not in fake.notes and 2 in fake.notes


def test_memory_screen_refuses_an_unrecognised_person(qtbot, make_window, fake) -> None:
    fake.presence = UNKNOWN
    window = make_window(fake)
    with qtbot.waitSignal(window.memory.changed, timeout=5000) as blocker:
        window.show_screen(MEMORY)
    assert blocker.args[0] == "not-recognised"
    assert window.memory.notes == [] and not window.memory.forget_button.isEnabled()


def test_deleting_after_the_person_changed_is_refused(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    with qtbot.waitSignal(window.memory.changed, timeout=5000):
        window.show_screen(MEMORY)
    fake.presence = UNKNOWN
    with qtbot.waitSignal(window.memory.changed, timeout=5000) as blocker:
        window.memory.delete_note(1)
    assert blocker.args[0] == "failed" and "changed" in window.memory.status.text()
    assert [n.id for n in fake.notes[1]] == [1, 2]


def test_memory_screen_marks_faded_notes_and_restores_them(qtbot, make_window, fake) -> None:
    fake.notes[1].append(NoteView(7, "I parked on level 3.", datetime(2024, 1, 1, tzinfo=UTC), archived=True))
    window = make_window(fake)
    memory = window.memory
    with qtbot.waitSignal(memory.changed, timeout=5000):
        window.show_screen(MEMORY)
    assert "(1 faded)" in memory.status.text()
    assert memory.findChild(type(window.main.send_button), "restore-1") is None  # only faded notes have one
    restore = memory.findChild(type(window.main.send_button), "restore-7")
    with qtbot.waitSignal(memory.changed, timeout=5000) as blocker:
        click(qtbot, restore)
    assert blocker.args[0] == "restored" and "Restored" in memory.status.text()
    assert not any(n.archived for n in fake.notes[1]) and len(fake.notes[1]) == 3  # restored, nothing deleted


# --- admin ------------------------------------------------------------------------------------------
def test_admin_pin_first_run_then_wrong_pins_lock_out(qtbot, make_window, fake, ui_config) -> None:
    window = make_window(fake)
    click(qtbot, window.main.admin_button)
    admin = window.admin
    assert window.current == ADMIN and "Choose an admin PIN" in admin.gate.prompt.text()
    admin.gate.pad.type_pin("2580")
    admin.gate.pad.type_pin("2581")
    assert "differ" in admin.gate.message.text() and not admin.unlocked
    admin.gate.pad.type_pin("2580")
    admin.gate.pad.type_pin("2580")
    # A face-camera terminal (the default config): the scripted liveness check passes on its first poll.
    qtbot.waitUntil(lambda: admin.unlocked, timeout=5000)
    assert fake.challenge_purposes == ["unlock"]
    pin_file = ui_config.paths.data_dir / "admin_pin.json"
    stored = json.loads(pin_file.read_text())
    # The random salt and the hash are hex and may contain the digits 2580 by chance; every other field may not.
    assert "2580" not in json.dumps({k: v for k, v in stored.items() if k not in ("salt", "hash")})
    window.show_screen(MAIN)
    window.show_screen(ADMIN)
    assert not admin.unlocked and "Enter the admin PIN" in admin.gate.prompt.text()
    for _ in range(ui_config.ui.admin_pin_attempts):
        admin.gate.pad.type_pin("0000")
    assert "Locked for 30 s" in admin.gate.message.text()
    admin.gate.pad.type_pin("2580")  # right PIN, but locked
    assert not admin.unlocked and "Try again in" in admin.gate.message.text()
    assert window.isVisible()
    actions = [(e["action"], e.get("ok")) for e in window.ctx.audit.entries()]
    assert actions[:2] == [("admin-pin-set", None), ("admin-challenge", True)]
    assert actions.count(("admin-login", False)) == ui_config.ui.admin_pin_attempts + 1


def unlock(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """PIN, then the scripted liveness check (FakeServices passes it unless a test scripts otherwise)."""
    window.ctx.admin_pin.set_pin("2580")
    window.show_screen(ADMIN)
    window.admin.gate.pad.type_pin("2580")
    qtbot.waitUntil(lambda: window.admin.unlocked, timeout=5000)


def test_admin_calibration_shows_histogram_rules_and_applies(qtbot, make_window, fake, tmp_path) -> None:
    window = make_window(fake)
    unlock(qtbot, window)
    admin = window.admin
    calibration = admin.calibration_tab
    calibration.folder.setText(str(tmp_path))
    with qtbot.waitSignal(admin.calibration_ready, timeout=10_000):
        click(qtbot, calibration.run_button)
    assert calibration.chosen_rule() == "fused"  # the kiosk's default when the data allows fused trials
    assert calibration.histogram.genuine is not None and calibration.histogram.chosen == "fused"
    assert "τ 0.600" in calibration.rule_figures["fused"].text()
    strict = calibration.rule_figures["strict"].text()
    assert "τ 0.520" in strict and "FAR 0.01 %" in strict
    click(qtbot, calibration.rule_buttons["tau_d"])
    assert calibration.histogram.chosen == "tau_d"
    save_screenshot(window, "fake-admin-calibration")
    with qtbot.waitSignal(
        admin.action_done, timeout=5000, check_params_cb=lambda what: what != "users-listed"
    ) as blocker:
        click(qtbot, calibration.apply_button)
    assert blocker.args[0] == "calibration-applied" and fake.applied == ("face", "tau_d")
    assert "τ = 0.430" in calibration.cal_status.text()
    actions = [e["action"] for e in window.ctx.audit.entries()]
    assert actions[-3:] == ["calibration-run", "calibration-done", "calibration-applied"]


def test_admin_calibration_errors_are_shown(qtbot, make_window, fake, tmp_path) -> None:
    window = make_window(fake)
    unlock(qtbot, window)
    admin = window.admin
    calibration = admin.calibration_tab
    calibration.folder.setText(str(tmp_path / "missing"))
    click(qtbot, calibration.run_button)
    assert "Not a folder" in calibration.cal_status.text()
    fake.calibration_error = "the data holds only one identity"
    calibration.folder.setText(str(tmp_path))
    with qtbot.waitSignal(admin.action_done, timeout=10_000, check_params_cb=lambda what: what == "calibration-failed"):
        click(qtbot, calibration.run_button)
    assert "only one identity" in calibration.cal_status.text() and calibration.run_button.isEnabled()


def test_admin_removes_users_and_changes_gate_policy(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    with qtbot.waitSignal(window.admin.action_done, timeout=5000, check_params_cb=lambda what: what == "users-listed"):
        unlock(qtbot, window)
    admin = window.admin
    admin.tabs.setCurrentIndex(1)
    assert admin.users.count() == 2
    admin.users.setCurrentRow(1)
    click(qtbot, admin.remove_button)
    assert admin.confirm_remove.isVisible() and 2 in fake.users
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "users-listed"):
        click(qtbot, admin.confirm_remove)
    assert 2 not in fake.users and admin.users.count() == 1
    save_screenshot(window, "fake-admin-users")
    admin.tabs.setCurrentIndex(2)
    qtbot.waitUntil(lambda: admin.gate_choice.count() == 2, timeout=5000)
    admin.gate_choice.setCurrentText("threshold")
    admin.llm_choice.setCurrentText("smollm2-135m-instruct")
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "settings-applied"):
        admin.apply_settings()
    assert fake.settings_state.gate_policy == "threshold"
    assert fake.settings_state.llm_model == "smollm2-135m-instruct"
    actions = [e["action"] for e in window.ctx.audit.entries()]
    assert "user-removed" in actions and "settings-applied" in actions


def test_admin_creates_groups_and_manages_members(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    with qtbot.waitSignal(window.admin.action_done, timeout=5000, check_params_cb=lambda what: what == "groups-listed"):
        unlock(qtbot, window)
    admin = window.admin
    admin.tabs.setCurrentIndex(3)
    assert admin.groups_tab.groups.count() == 1 and "Ada" in admin.groups_tab.groups.item(0).text()
    admin.groups_tab.group_name.setText("ward 3")
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "groups-listed"):
        click(qtbot, admin.groups_tab.add_group_button)
    assert [name for name, _ in fake.groups.values()] == ["family", "ward 3"]
    admin.groups_tab.groups.setCurrentRow(1)
    admin.groups_tab.member_choice.setCurrentText("Bob")
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "groups-listed"):
        click(qtbot, admin.groups_tab.add_member_button)
    assert fake.groups[51][1] == {2} and "Bob" in admin.groups_tab.groups.item(1).text()
    save_screenshot(window, "fake-admin-groups")
    admin.groups_tab.groups.setCurrentRow(0)
    with qtbot.waitSignal(admin.action_done, timeout=5000) as blocker:
        click(qtbot, admin.groups_tab.remove_member_button)  # Bob is not in "family": a clear message, nothing changes
    assert blocker.args[0] == "member-removed-failed" and "not a member" in admin.groups_tab.groups_status.text()
    admin.groups_tab.group_name.setText("family")
    with qtbot.waitSignal(admin.action_done, timeout=5000) as blocker:
        click(qtbot, admin.groups_tab.add_group_button)
    assert blocker.args[0] == "group-created-failed" and "already exists" in admin.groups_tab.groups_status.text()
    admin.groups_tab.groups.setCurrentRow(1)
    click(qtbot, admin.groups_tab.delete_group_button)
    assert admin.groups_tab.confirm_delete_group.isVisible() and 51 in fake.groups
    with qtbot.waitSignal(admin.action_done, timeout=5000, check_params_cb=lambda what: what == "groups-listed"):
        click(qtbot, admin.groups_tab.confirm_delete_group)
    assert list(fake.groups) == [50]
    actions = [e["action"] for e in window.ctx.audit.entries()]
    assert {"group-created", "member-added", "group-deleted", "member-removed-failed"} <= set(actions)
