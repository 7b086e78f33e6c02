"""The palm scanner beside the camera (kiosk.app.palm.LivePalm): only palms scanned after a question count."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import cast

import numpy as np
import pytest

from kiosk.app.palm import LivePalm
from kiosk.errors import ProbeError
from kiosk.identity.palm_capture import PalmCapture
from kiosk.identity.sources import ThreadedSource

PALM = np.full((4, 4), 200, dtype=np.uint8)
NO_HAND = np.zeros((4, 4), dtype=np.uint8)


class ManualScanner(ThreadedSource):
    """A scanner whose frames the test puts in one at a time."""

    def __init__(self) -> None:
        super().__init__("manual scanner")

    def _run(self) -> None:
        self._stop.wait()

    def scan(self, image: np.ndarray) -> None:
        self._publish(image)


class FakeCapture:
    """PalmCapture's part LivePalm uses: a bright frame is a palm, a dark one has no hand."""

    def __init__(self, source: ManualScanner) -> None:
        self.source = source
        self.embedder = type("Embedder", (), {"model_sha256": "palm-sha"})()

    def embed_frame(self, image: np.ndarray) -> np.ndarray:
        if not image.any():
            raise ProbeError("no hand found", "hold the open palm over the scanner")
        return np.array([1.0, 0.0, 0.0], dtype=np.float32)


@pytest.fixture()
def scanner() -> Iterator[tuple[LivePalm, ManualScanner]]:
    source = ManualScanner()
    palm = LivePalm(cast(PalmCapture, FakeCapture(source)))
    palm.start()
    yield palm, source
    palm.stop()


def encoded(palm: LivePalm, count: int) -> None:
    deadline = time.monotonic() + 5.0
    while palm.verifier.analysed < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert palm.verifier.analysed >= count


def test_a_palm_scanned_before_the_question_is_never_its_probe(scanner: tuple[LivePalm, ManualScanner]) -> None:
    palm, source = scanner
    source.scan(PALM)
    encoded(palm, 1)
    asked_at = time.time()
    assert palm.fresh_probe(asked_at, time.monotonic() + 0.3) is None
    source.scan(PALM)
    probe = palm.fresh_probe(asked_at, time.monotonic() + 5.0)
    assert probe is not None and probe.modality == "palm" and probe.captured_at >= asked_at
    assert probe.model_sha256 == "palm-sha"


def test_an_empty_scanner_ends_the_wait_beside_a_verified_face(scanner: tuple[LivePalm, ManualScanner]) -> None:
    palm, source = scanner
    asked_at = time.time()
    source.scan(NO_HAND)
    started = time.monotonic()
    assert palm.fresh_probe(asked_at, started + 5.0, stop_when_empty=True) is None
    assert time.monotonic() - started < 2.0
    assert palm.problem() is not None and "no hand found" in palm.problem()  # type: ignore[operator]


def test_enrolment_samples_come_from_newly_encoded_scans(scanner: tuple[LivePalm, ManualScanner]) -> None:
    palm, source = scanner
    source.scan(PALM)
    encoded(palm, 1)
    vector, hint = palm.next_sample(0.2)  # nothing new scanned since
    assert vector is None and hint
    source.scan(NO_HAND)
    vector, hint = palm.next_sample(5.0)
    assert vector is None and hint is not None and "no hand found" in hint
    source.scan(PALM)
    vector, hint = palm.next_sample(5.0)
    assert vector is not None and hint is None


def test_the_scanner_holds_a_palm_only_while_its_newest_frame_shows_one(
    scanner: tuple[LivePalm, ManualScanner],
) -> None:
    palm, source = scanner
    assert not palm.holds_palm()  # nothing scanned yet
    source.scan(PALM)
    encoded(palm, 1)
    assert palm.holds_palm()
    source.scan(NO_HAND)
    encoded(palm, 2)
    assert not palm.holds_palm()
