"""Admin access: the PIN, then (on a face-camera terminal) a passed blink / head-turn liveness challenge.

The decisions live here, Qt-free; the admin screen only renders the `AccessStep` it gets back and runs the
challenge on the live camera through the services. Unlocking the screen needs both factors; a destructive action
(`DESTRUCTIVE`) needs a challenge passed within `CHALLENGE_FRESH_S`, else it asks for a new one.

The challenge proves that a live person stands at the camera, not who it is: the PIN is the admin's secret. A failed
challenge (the asked blink or turn not seen in time: a photo, a replayed clip, nobody there) counts like a wrong PIN
in the PIN's persistent back-off, so a stolen PIN plus a photo cannot be retried without limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from kiosk.config import KioskConfig
from kiosk.security.admin_pin import AdminPin
from kiosk.security.audit import AuditLog

CHALLENGE_FRESH_S = 120.0  # seconds a passed admin challenge also covers destructive admin actions
AdminAction = Literal["unlock", "remove-user", "apply-calibration", "delete-group"]
DESTRUCTIVE: frozenset[AdminAction] = frozenset({"remove-user", "apply-calibration", "delete-group"})
ChallengeOutcome = Literal["waiting", "passed", "failed", "off"]
# pin: the screen is locked (enter the PIN); challenge: run the liveness challenge for `action`;
# granted: `action` may go ahead (for "unlock": show the admin tabs); denied: `action` refused, still unlocked.
StepKind = Literal["pin", "challenge", "granted", "denied"]
ACTION_WORDS: dict[AdminAction, str] = {
    "unlock": "unlock the admin screen",
    "remove-user": "remove a user",
    "apply-calibration": "change the threshold",
    "delete-group": "delete a group",
}


@dataclass(frozen=True)
class ChallengeRule:
    """Whether this terminal asks for the liveness challenge, and one line saying so on the PIN screen."""

    required: bool
    note: str


def challenge_rule(config: KioskConfig) -> ChallengeRule:
    mode = config.security.admin_challenge
    both = "Admin access needs the PIN and a blink or head-turn check at the camera."
    if mode == "off":
        return ChallengeRule(False, "Admin access needs the PIN only (security.admin_challenge = off).")
    if mode == "on":
        return ChallengeRule(True, both)
    if not config.capture.face_source.strip():
        return ChallengeRule(False, "Palm-only terminal (no face camera): admin access needs the PIN only.")
    if not config.pad.enabled:
        return ChallengeRule(False, "Liveness checks are off (pad.enabled): admin access needs the PIN only.")
    return ChallengeRule(True, both)


@dataclass(frozen=True)
class AccessStep:
    kind: StepKind
    action: AdminAction
    message: str
    locked_for_s: float = 0.0


class AdminAccess:
    """One terminal's admin session: `enter_pin` / `pin_chosen`, then `challenge_update` until not "challenge"."""

    def __init__(
        self,
        pin: AdminPin,
        rule: ChallengeRule,
        audit: AuditLog,
        *,
        fresh_s: float = CHALLENGE_FRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pin = pin
        self.rule = rule
        self.audit = audit
        self.fresh_s = fresh_s
        self._clock = clock
        self._unlocked = False
        self._pending: AdminAction | None = None
        self._passed_at: float | None = None

    @classmethod
    def for_config(cls, config: KioskConfig, pin: AdminPin, audit: AuditLog) -> AdminAccess:
        return cls(pin, challenge_rule(config), audit, fresh_s=CHALLENGE_FRESH_S)

    @property
    def unlocked(self) -> bool:
        return self._unlocked

    @property
    def pending(self) -> AdminAction | None:
        """The action a running challenge is for."""
        return self._pending

    def lock(self) -> None:
        """Leaving the admin screen: the next visit starts at the PIN again."""
        self._unlocked = False
        self._pending = None
        self._passed_at = None

    # --- unlocking ----------------------------------------------------------------------------------
    def enter_pin(self, pin: str) -> AccessStep:
        check = self.pin.check(pin, final=not self.rule.required)
        self.audit.record(
            "admin-login",
            ok=check.ok,
            locked_for_s=round(check.locked_for_s, 1),
            challenge_next=check.ok and self.rule.required,
        )
        if not check.ok:
            return AccessStep("pin", "unlock", check.message, check.locked_for_s)
        return self._second_factor("unlock", "PIN accepted.")

    def pin_chosen(self) -> AccessStep:
        """First run: the PIN was just set; the liveness challenge (when required) still comes before the tabs."""
        self.audit.record("admin-pin-set")
        return self._second_factor("unlock", "PIN saved.")

    def _second_factor(self, action: AdminAction, done: str) -> AccessStep:
        if not self.rule.required:
            return self._grant(action, done)
        self._pending = action
        return AccessStep("challenge", action, f"{done} Now look at the camera for a short liveness check.")

    def _grant(self, action: AdminAction, message: str) -> AccessStep:
        if action == "unlock":
            self._unlocked = True
        return AccessStep("granted", action, message)

    # --- destructive actions ------------------------------------------------------------------------
    def request(self, action: AdminAction) -> AccessStep:
        """May `action` go ahead now? A destructive one needs a recently passed challenge."""
        if not self._unlocked:
            return AccessStep("pin", action, "Enter the admin PIN first.")
        if action not in DESTRUCTIVE or not self.rule.required or self._fresh():
            return AccessStep("granted", action, "")
        self._pending = action
        return AccessStep(
            "challenge", action, f"To {ACTION_WORDS[action]}, look at the camera for a short liveness check."
        )

    def _fresh(self) -> bool:
        return self._passed_at is not None and self._clock() - self._passed_at <= self.fresh_s

    # --- the challenge's outcome --------------------------------------------------------------------
    def challenge_update(self, status: ChallengeOutcome, prompt: str, reason: str) -> AccessStep:
        """Feed what the live challenge reports (services.challenge_status) until the step is not "challenge"."""
        action = self._pending
        if action is None:
            return AccessStep("pin" if not self._unlocked else "denied", "unlock", "No liveness check was started.")
        if status == "waiting":
            return AccessStep("challenge", action, prompt or "Look at the camera")
        self._pending = None
        if status == "passed":
            self.pin.record_success()
            self._passed_at = self._clock()
            self.audit.record("admin-challenge", ok=True, purpose=action, reason=reason)
            return self._grant(action, "Liveness confirmed.")
        if status == "off":
            # The terminal cannot run the challenge (no Face Mesh, liveness off): a set-up problem, not an attempt.
            self.audit.record("admin-challenge", ok=False, purpose=action, reason=f"unavailable: {reason}")
            message = (
                f"The liveness check cannot run on this terminal ({reason}). Turn on pad.enabled, "
                "or set security.admin_challenge = off for PIN-only admin access."
            )
            return self._refuse(action, message, 0.0)
        check = self.pin.record_failure(f"No live person confirmed ({reason}).")
        self.audit.record(
            "admin-challenge", ok=False, purpose=action, reason=reason, locked_for_s=round(check.locked_for_s, 1)
        )
        return self._refuse(action, check.message, check.locked_for_s)

    def _refuse(self, action: AdminAction, message: str, locked_for_s: float) -> AccessStep:
        if action == "unlock" or locked_for_s > 0:
            self.lock()
            return AccessStep("pin", action, message, locked_for_s)
        return AccessStep("denied", action, message)
