"""Exponential back-off on a fake clock: free failures, doubling locks, cap, reset on success or quiet."""

from __future__ import annotations

import pytest

from kiosk.security.backoff import Backoff, BackoffState, no_backoff


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_locks_start_after_the_free_failures_and_double_up_to_the_cap() -> None:
    clock = Clock()
    backoff = Backoff(3, base_s=2.0, max_s=10.0, clock=clock)
    assert [backoff.failure() for _ in range(2)] == [0.0, 0.0]
    assert backoff.wait_s() == 0
    assert backoff.failure() == 2.0
    assert backoff.wait_s() == 2.0
    clock.now += 1.5
    assert backoff.wait_s() == pytest.approx(0.5)
    clock.now += 1.0
    assert [backoff.failure() for _ in range(3)] == [4.0, 8.0, 10.0]
    backoff.success()
    assert backoff.wait_s() == 0 and backoff.failures_left == 3


def test_a_quiet_spell_resets_the_count_and_state_round_trips() -> None:
    clock = Clock()
    backoff = Backoff(2, base_s=1.0, max_s=60.0, reset_s=30.0, clock=clock)
    backoff.failure()
    assert backoff.failure() == 1.0
    restored = Backoff(2, 1.0, 60.0, reset_s=30.0, clock=clock, state=BackoffState.from_dict(backoff.state.as_dict()))
    assert restored.failure() == 2.0
    clock.now += 31
    assert restored.failure() == 0.0  # the count started over


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        Backoff(0, 1.0, 2.0)
    with pytest.raises(ValueError):
        Backoff(1, 5.0, 2.0)


def test_no_backoff_never_locks_however_many_failures() -> None:
    backoff = no_backoff()
    for _ in range(50):
        assert backoff.failure() == 0.0
        assert backoff.wait_s() == 0.0
