"""The admin PIN: set at first run, stored only as a salted scrypt hash, wrong guesses backed off.

`attempts` wrong PINs are free; each further one locks for lockout_s, doubling up to max_lockout_s
(kiosk.security.backoff). The back-off state lives in the same file, so restarting the app does not reset it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kiosk.errors import KioskError
from kiosk.security.backoff import Backoff, BackoffState

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
MIN_DIGITS = 4
MAX_DIGITS = 12


@dataclass(frozen=True)
class PinCheck:
    ok: bool
    message: str
    attempts_left: int
    locked_for_s: float = 0.0


def _hash(pin: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(pin.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=32)


class AdminPin:
    def __init__(
        self,
        path: Path,
        attempts: int,
        lockout_s: float,
        clock: Callable[[], float] = time.time,
        *,
        max_lockout_s: float = 3600.0,
    ) -> None:
        self.path = path
        self.attempts = attempts
        self.lockout_s = lockout_s
        self.max_lockout_s = max(max_lockout_s, lockout_s)
        self._clock = clock

    def _backoff(self, state: dict[str, Any]) -> Backoff:
        return Backoff(
            self.attempts,
            self.lockout_s,
            self.max_lockout_s,
            clock=self._clock,
            state=BackoffState.from_dict(state.get("backoff", {})),
        )

    def is_set(self) -> bool:
        return self.path.is_file()

    def set_pin(self, pin: str) -> None:
        if not (pin.isdigit() and MIN_DIGITS <= len(pin) <= MAX_DIGITS):
            raise KioskError(f"the PIN must be {MIN_DIGITS} to {MAX_DIGITS} digits", "choose another PIN")
        salt = secrets.token_bytes(16)
        self._write(
            {
                "kdf": "scrypt",
                "n": SCRYPT_N,
                "r": SCRYPT_R,
                "p": SCRYPT_P,
                "salt": salt.hex(),
                "hash": _hash(pin, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P).hex(),
                "backoff": BackoffState().as_dict(),
            }
        )

    def check(self, pin: str, *, final: bool = True) -> PinCheck:
        """Check a PIN. With `final=False` (a second factor follows) a right PIN does not clear the back-off:
        only `record_success` does, so right PIN + failed challenge, repeated, still locks."""
        state = self._read()
        backoff = self._backoff(state)
        wait = backoff.wait_s()
        if wait > 0:
            return PinCheck(False, f"Too many failed attempts. Try again in {wait:.0f} s.", 0, wait)
        expected = bytes.fromhex(state["hash"])
        given = _hash(pin, bytes.fromhex(state["salt"]), int(state["n"]), int(state["r"]), int(state["p"]))
        if hmac.compare_digest(expected, given):
            if final:
                backoff.success()
                state["backoff"] = backoff.state.as_dict()
                self._write(state)
            return PinCheck(True, "PIN accepted.", backoff.failures_left)
        return self._failed(state, backoff, "Wrong PIN.")

    def record_failure(self, what: str = "Check failed.") -> PinCheck:
        """A failed second factor after a right PIN: it counts like a wrong PIN."""
        state = self._read()
        return self._failed(state, self._backoff(state), what)

    def record_success(self) -> None:
        """PIN and second factor both passed: the back-off starts over."""
        state = self._read()
        backoff = self._backoff(state)
        backoff.success()
        state["backoff"] = backoff.state.as_dict()
        self._write(state)

    def _failed(self, state: dict[str, Any], backoff: Backoff, what: str) -> PinCheck:
        lock = backoff.failure()
        state["backoff"] = backoff.state.as_dict()
        self._write(state)
        if lock > 0:
            return PinCheck(False, f"{what} Locked for {lock:.0f} s.", 0, lock)
        left = backoff.failures_left
        return PinCheck(False, f"{what} {left} attempt{'s' if left != 1 else ''} left.", left)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise KioskError(
                f"the admin PIN file {self.path} cannot be read ({exc})",
                "delete it to set a new PIN at the next start",
            ) from exc
        if not isinstance(data, dict) or "hash" not in data or "salt" not in data:
            raise KioskError(f"the admin PIN file {self.path} is damaged", "delete it to set a new PIN")
        return data

    def _write(self, state: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        os.replace(tmp, self.path)
