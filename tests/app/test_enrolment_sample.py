"""A face sample at enrolment on a face+palm terminal (kiosk.app.enrolment.Enrolment.enrollment_sample): a palm
already on the scanner is waited for longer than an empty scanner, so a busy terminal still reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pytest

from kiosk.app.enrolment import PALM_BESIDE_FACE_WAIT_S, SAMPLE_WAIT_S, Enrolment

FACE = np.array([1.0, 0.0], dtype=np.float32)
PALM = np.array([0.0, 1.0], dtype=np.float32)


@dataclass
class Frame:
    index: int


@dataclass
class Analysed:
    frame: Frame
    analysis: Any
    error: str | None = None


class FaceAnalysisStub:
    second_face_in_view = False
    embedding = FACE


class NewFrameEachCall:
    """The camera's verifier: every call to latest() has analysed one more frame with a good face."""

    def __init__(self) -> None:
        self.index = 0

    def latest(self) -> Analysed:
        self.index += 1
        return Analysed(Frame(self.index), FaceAnalysisStub())


class Scanner:
    def __init__(self, holds: bool) -> None:
        self.holds = holds
        self.waits: list[float] = []

    def holds_palm(self) -> bool:
        return self.holds

    def next_sample(self, wait_s: float) -> tuple[np.ndarray | None, str | None]:
        self.waits.append(wait_s)
        return (PALM, None) if self.holds else (None, "Hold your open palm over the scanner")


class Live:
    has_camera = True

    def __init__(self, palm: Scanner) -> None:
        self.palm = palm
        self.verifier = NewFrameEachCall()


@pytest.mark.parametrize(("holds", "wait_s"), [(True, SAMPLE_WAIT_S), (False, PALM_BESIDE_FACE_WAIT_S)])
def test_a_palm_on_the_scanner_is_waited_for_longer_than_an_empty_scanner(holds: bool, wait_s: float) -> None:
    scanner = Scanner(holds)
    enrolment = Enrolment(cast(Any, None), cast(Any, Live(scanner)), cast(Any, None), cast(Any, None))
    sample = enrolment.enrollment_sample()
    assert sample.ok and sample.embedding is not None
    assert scanner.waits == [wait_s]
    assert (sample.palm is not None) == holds
