"""One attack of issue #34 re-run end to end: what a careful tester tried, what should happen, what did."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttackResult:
    attack: str
    expected: str
    observed: str
    broken: bool
    """True when the observed outcome is the break the attack looks for (the expected defence did not hold)."""
