"""Exponential back-off after repeated failures (verifications at the camera, admin PIN guesses).

The first `free_failures - 1` failures in a row cost nothing; failure number `free_failures` locks for
`base_s` and each further one doubles the lock, capped at `max_s`. A success starts over; so does a quiet
spell of `reset_s` without failures (when set). The state is
a small dict, so the admin PIN can persist it in its file and a restart does not reset the count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from kiosk.config import SecurityConfig


@dataclass
class BackoffState:
    failures: int = 0
    locked_until: float = 0.0
    last_failure: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BackoffState:
        return cls(
            int(data.get("failures", 0)), float(data.get("locked_until", 0.0)), float(data.get("last_failure", 0.0))
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Backoff:
    def __init__(
        self,
        free_failures: int,
        base_s: float,
        max_s: float,
        *,
        reset_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        state: BackoffState | None = None,
    ) -> None:
        if free_failures < 1 or base_s < 0 or max_s < base_s:
            raise ValueError("back-off needs free_failures >= 1 and 0 <= base_s <= max_s")
        self.free_failures = free_failures
        self.base_s = base_s
        self.max_s = max_s
        self.reset_s = reset_s
        self._clock = clock
        self.state = state or BackoffState()

    def wait_s(self) -> float:
        """Seconds until another attempt is allowed (0: allowed now)."""
        return max(0.0, self.state.locked_until - self._clock())

    @property
    def failures_left(self) -> int:
        """Failures left before a lock (0 once back-off has begun)."""
        return max(0, self.free_failures - self.state.failures)

    def failure(self) -> float:
        """Count a failure; returns the lock it earned in seconds (0 while still free)."""
        now = self._clock()
        if self.reset_s is not None and self.state.failures and now - self.state.last_failure > self.reset_s:
            self.state.failures = 0
        self.state.failures += 1
        self.state.last_failure = now
        over = self.state.failures - self.free_failures
        if over < 0:
            return 0.0
        lock = min(self.max_s, self.base_s * (2.0**over))
        self.state.locked_until = now + lock
        return lock

    def success(self) -> None:
        self.state = BackoffState()


BACKOFF_BASE_S = 2.0  # first back-off after the free failures; doubles with every further one
BACKOFF_RESET_S = 900.0  # quiet time after which the failure count of verifications starts over


def verification_backoff(security: SecurityConfig, clock: Callable[[], float] = time.monotonic) -> Backoff:
    """The terminal's back-off for failed biometric verifications (no match or ambiguous)."""
    return Backoff(
        security.verify_free_failures,
        BACKOFF_BASE_S,
        security.backoff_max_s,
        reset_s=BACKOFF_RESET_S,
        clock=clock,
    )


def no_backoff() -> Backoff:
    """For offline evaluation and benchmarks: every probe is compared, however many failed before it."""
    return Backoff(free_failures=1, base_s=0.0, max_s=0.0)
