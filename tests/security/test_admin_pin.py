"""The admin PIN is stored salted and hashed, and wrong guesses lock the screen for longer and longer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kiosk.errors import KioskError
from kiosk.security.admin_pin import AdminPin


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_pin_is_stored_as_salted_hash_only(tmp_path: Path) -> None:
    first, second = AdminPin(tmp_path / "a.json", 3, 60), AdminPin(tmp_path / "b.json", 3, 60)
    first.set_pin("482915")
    second.set_pin("482915")
    stored = [json.loads(p.read_text()) for p in (first.path, second.path)]
    # The random salt and the hash are hex and may contain the digits by chance; every other field may not.
    assert "482915" not in json.dumps({k: v for k, v in stored[0].items() if k not in ("salt", "hash")})
    assert all(re.fullmatch("[0-9a-f]{32,}", stored[0][field]) for field in ("salt", "hash"))
    assert stored[0]["kdf"] == "scrypt"
    assert stored[0]["salt"] != stored[1]["salt"]
    assert stored[0]["hash"] != stored[1]["hash"]
    assert first.path.stat().st_mode & 0o777 == 0o600
    assert first.check("482915").ok
    assert not first.check("482916").ok


@pytest.mark.parametrize("pin", ["12", "abcd", "1234567890123", ""])
def test_bad_pins_are_refused(tmp_path: Path, pin: str) -> None:
    with pytest.raises(KioskError, match="4 to 12 digits"):
        AdminPin(tmp_path / "pin.json", 3, 60).set_pin(pin)


def test_wrong_pins_lock_out_and_the_lock_survives_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    pin = AdminPin(tmp_path / "pin.json", attempts=3, lockout_s=60, clock=clock)
    pin.set_pin("2468")
    assert pin.check("1111").attempts_left == 2
    assert pin.check("1111").attempts_left == 1
    locked = pin.check("1111")
    assert not locked.ok and locked.locked_for_s == 60
    restarted = AdminPin(tmp_path / "pin.json", attempts=3, lockout_s=60, clock=clock)
    refused = restarted.check("2468")  # even the right PIN is refused while locked
    assert not refused.ok and "Try again in 60 s" in refused.message
    clock.now += 61
    assert restarted.check("2468").ok


def test_damaged_pin_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "pin.json"
    path.write_text("{not json")
    with pytest.raises(KioskError, match="cannot be read"):
        AdminPin(path, 3, 60).check("1234")


def test_locks_double_after_each_further_wrong_pin_up_to_the_cap(tmp_path: Path) -> None:
    clock = Clock()
    pin = AdminPin(tmp_path / "pin.json", attempts=2, lockout_s=60, clock=clock, max_lockout_s=200)
    pin.set_pin("2468")
    assert pin.check("1111").locked_for_s == 0
    locks = []
    for _ in range(4):
        locks.append(pin.check("1111").locked_for_s)
        assert not pin.check("2468").ok  # locked: even the right PIN waits
        clock.now += locks[-1] + 1
    assert locks == [60, 120, 200, 200]
    assert pin.check("2468").ok
    assert pin.check("1111").attempts_left == 1  # a success starts the count over
