"""Admin access on a face-camera terminal: PIN and a passed liveness challenge, driven by scripted landmark sequences.

The challenge here is the real `ActiveChallenge` fed with synthetic Face Mesh measurements (tests/landmarks.py):
a live blink or head turn passes, a static photo (the same landmarks frame after frame) and an empty view time out,
and every failure is audited and counts toward the PIN's back-off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from landmarks import samples

from kiosk.config import KioskConfig
from kiosk.identity.challenge import CHALLENGE, ActiveChallenge, ChallengeKind, ChallengeSample, ChallengeState
from kiosk.security.admin_access import AdminAccess, ChallengeRule, challenge_rule
from kiosk.security.admin_pin import AdminPin
from kiosk.security.audit import AuditLog

PIN = "2580"
OPEN, SHUT = 0.30, 0.10
BLINK = [(OPEN, 0.0)] * 5 + [(SHUT, 0.0)] * 2 + [(OPEN, 0.0)] * 2
TURN_LEFT = [(OPEN, 0.0)] * 3 + [(OPEN, 0.2), (OPEN, 0.45), (OPEN, 0.5), (OPEN, 0.3), (OPEN, 0.05)]
TIMEOUT_S = CHALLENGE.timeout_s


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal:
    """An admin PIN file, an audit log and AdminAccess with the challenge required, on one test clock."""

    def __init__(self, tmp_path: Path, attempts: int = 3, fresh_s: float = 120.0) -> None:
        self.clock = Clock()
        self.pin = AdminPin(tmp_path / "admin_pin.json", attempts, 30.0, clock=self.clock, max_lockout_s=600.0)
        self.pin.set_pin(PIN)
        self.audit = AuditLog(tmp_path / "logs")
        self.access = AdminAccess(
            self.pin, ChallengeRule(True, "PIN and liveness"), self.audit, fresh_s=fresh_s, clock=self.clock
        )

    def failures(self) -> int:
        return int(json.loads(self.pin.path.read_text())["backoff"]["failures"])

    def challenge(self, kind: ChallengeKind, frames: list[ChallengeSample]):  # type: ignore[no-untyped-def]
        """Run one live challenge on the scripted frames, as the kiosk does, and hand its end to AdminAccess."""
        challenge = ActiveChallenge(kind, started_at=0.0)
        state: ChallengeState = challenge.state()
        for sample in frames:
            state = challenge.feed(sample)
            step = self.access.challenge_update(state.status, state.prompt, state.message)
            if step.kind != "challenge":
                return step
        state = challenge.feed(ChallengeSample(TIMEOUT_S + 1, None, None))  # the screen keeps polling: time runs out
        return self.access.challenge_update(state.status, state.prompt, state.message)

    def actions(self) -> list[tuple[object, object]]:
        return [(e["action"], e.get("ok")) for e in self.audit.entries()]


def still(openness: float, yaw: float, seconds: float = TIMEOUT_S + 1) -> list[ChallengeSample]:
    """A photo or a frozen replay: the same landmarks in every frame."""
    return samples([(openness, yaw)] * int(seconds * 10))


def test_the_right_pin_then_a_blink_unlocks(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    step = terminal.access.enter_pin(PIN)
    assert step.kind == "challenge" and "liveness check" in step.message and not terminal.access.unlocked
    step = terminal.challenge("blink", samples(BLINK))
    assert step.kind == "granted" and terminal.access.unlocked
    assert terminal.actions() == [("admin-login", True), ("admin-challenge", True)]
    assert terminal.audit.entries()[-1]["purpose"] == "unlock"


def test_the_asked_head_turn_unlocks_and_the_other_direction_does_not(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    terminal.access.enter_pin(PIN)
    assert terminal.challenge("turn-left", samples(TURN_LEFT)).kind == "granted"
    other = Terminal(tmp_path / "other")
    other.access.enter_pin(PIN)
    step = other.challenge("turn-right", samples(TURN_LEFT))
    assert step.kind == "pin" and not other.access.unlocked
    assert "No live person confirmed" in step.message and "movement was not seen" in step.message


def test_a_wrong_pin_never_reaches_the_challenge(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    step = terminal.access.enter_pin("0000")
    assert step.kind == "pin" and "Wrong PIN" in step.message and terminal.access.pending is None
    assert terminal.failures() == 1


@pytest.mark.parametrize(
    ("kind", "openness", "yaw"),
    [("blink", OPEN, 0.0), ("blink", SHUT, 0.0), ("turn-left", OPEN, 0.0), ("turn-right", OPEN, -0.6)],
)
def test_a_static_photo_times_out_is_audited_and_counts(tmp_path: Path, kind: ChallengeKind, openness, yaw) -> None:  # type: ignore[no-untyped-def]
    terminal = Terminal(tmp_path)
    terminal.access.enter_pin(PIN)
    step = terminal.challenge(kind, still(openness, yaw))
    assert step.kind == "pin" and not terminal.access.unlocked
    assert "time is up" in step.message and "2 attempts left" in step.message
    assert terminal.failures() == 1
    entry = terminal.audit.entries()[-1]
    assert entry["action"] == "admin-challenge" and entry["ok"] is False and "time is up" in str(entry["reason"])


def test_nobody_at_the_camera_times_out_with_that_reason(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    terminal.access.enter_pin(PIN)
    step = terminal.challenge("blink", [ChallengeSample(i / 10, None, None) for i in range(20)])
    assert step.kind == "pin" and "no face was seen" in step.message


def test_the_right_pin_with_a_photo_repeatedly_locks_the_admin_screen(tmp_path: Path) -> None:
    """Without this, a stolen PIN would reset the back-off each time and a photo could be tried forever."""
    terminal = Terminal(tmp_path, attempts=3)
    for _attempt in range(3):
        assert terminal.access.enter_pin(PIN).kind == "challenge"
        step = terminal.challenge("blink", still(OPEN, 0.0))
    assert step.kind == "pin" and step.locked_for_s == 30.0 and "Locked for 30 s" in step.message
    refused = terminal.access.enter_pin(PIN)  # even the right PIN, while locked
    assert refused.kind == "pin" and "Try again in" in refused.message
    terminal.clock.now += 31
    assert terminal.access.enter_pin(PIN).kind == "challenge"
    assert terminal.challenge("blink", samples(BLINK)).kind == "granted"
    assert terminal.failures() == 0  # PIN and liveness both passed: the back-off starts over


def test_a_right_pin_alone_does_not_clear_earlier_failures(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path, attempts=3)
    terminal.access.enter_pin("1111")
    terminal.access.enter_pin("2222")
    assert terminal.access.enter_pin(PIN).kind == "challenge"
    assert terminal.failures() == 2
    step = terminal.challenge("turn-left", still(OPEN, 0.0))
    assert step.locked_for_s == 30.0


def test_destructive_actions_need_a_recent_challenge(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path, fresh_s=60.0)
    access = terminal.access
    assert access.request("remove-user").kind == "pin"  # locked screen: nothing goes
    access.enter_pin(PIN)
    terminal.challenge("blink", samples(BLINK))
    assert access.request("remove-user").kind == "granted"  # the unlock challenge is still fresh
    terminal.clock.now += 61
    step = access.request("apply-calibration")
    assert step.kind == "challenge" and "change the threshold" in step.message
    assert access.request("unlock").kind == "granted"  # not destructive
    failed = terminal.challenge("blink", still(OPEN, 0.0))
    assert failed.kind == "denied" and access.unlocked and failed.action == "apply-calibration"
    assert terminal.audit.entries()[-1]["purpose"] == "apply-calibration"
    assert access.request("delete-group").kind == "challenge"
    assert terminal.challenge("turn-left", samples(TURN_LEFT)).kind == "granted"
    assert access.request("remove-user").kind == "granted"


def test_failed_action_challenges_that_reach_the_lock_lock_the_screen(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path, attempts=2, fresh_s=1.0)
    terminal.access.enter_pin(PIN)
    terminal.challenge("blink", samples(BLINK))
    terminal.clock.now += 5
    for _ in range(2):
        terminal.access.request("remove-user")
        step = terminal.challenge("blink", still(SHUT, 0.0))
    assert step.kind == "pin" and step.locked_for_s > 0 and not terminal.access.unlocked


def test_a_challenge_the_terminal_cannot_run_refuses_without_counting(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    terminal.access.enter_pin(PIN)
    step = terminal.access.challenge_update("off", "", "liveness checks are off (pad.enabled)")
    assert step.kind == "pin" and "security.admin_challenge = off" in step.message
    assert terminal.failures() == 0
    assert str(terminal.audit.entries()[-1]["reason"]).startswith("unavailable")


def test_pin_only_when_the_challenge_is_not_required(tmp_path: Path) -> None:
    clock = Clock()
    pin = AdminPin(tmp_path / "admin_pin.json", 3, 30.0, clock=clock)
    pin.set_pin(PIN)
    access = AdminAccess(pin, ChallengeRule(False, "PIN only"), AuditLog(tmp_path / "logs"), fresh_s=1, clock=clock)
    assert access.enter_pin(PIN).kind == "granted" and access.unlocked
    clock.now += 100
    assert access.request("remove-user").kind == "granted"


def test_the_rule_follows_the_config(config: KioskConfig) -> None:
    config.capture.face_source = "0"
    assert challenge_rule(config).required  # auto, face camera, liveness on: the default
    palm_only = config.model_copy(deep=True)
    palm_only.capture.face_source = ""
    palm_only.capture.palm_source = "/dev/video2"
    rule = challenge_rule(palm_only)
    assert not rule.required and "Palm-only" in rule.note and "PIN only" in rule.note
    no_liveness = config.model_copy(deep=True)
    no_liveness.pad.enabled = False
    assert not challenge_rule(no_liveness).required and "pad.enabled" in challenge_rule(no_liveness).note
    no_liveness.security.admin_challenge = "on"
    assert challenge_rule(no_liveness).required  # asked for explicitly: refused later rather than silently PIN-only
    config.security.admin_challenge = "off"
    assert not challenge_rule(config).required and "admin_challenge = off" in challenge_rule(config).note


def test_the_audit_trail_holds_no_pin(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    terminal.access.enter_pin("9999")
    terminal.access.enter_pin(PIN)
    terminal.challenge("blink", still(OPEN, 0.0))
    text = terminal.audit.path.read_text()
    assert PIN not in text and "9999" not in text
