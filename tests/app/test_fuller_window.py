"""A question sent on the first frames of someone who has just stepped up: tau is set for a full fusion window,
so a refused probe of fewer frames is tried again as frames arrive (LiveCamera.with_fuller_window).

Fake frames as in test_step_up_fusion: Alice's single frame scores 0.55 against her template, below tau 0.6;
fused over the window's five frames she scores 0.735.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kiosk.app.live import verification_for
from kiosk.config import KioskConfig
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S
from kiosk.memory import SqliteStore, Store

from .test_step_up_fusion import ALICE, Camera, Frames, enrol, kiosk

STRANGER = 7  # an axis no enrolled person's template has


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    opened = SqliteStore(tmp_path / "memory.db")
    yield opened
    opened.close()


def first_frame(live: object, person: int) -> object:
    fuser = live.fuser  # type: ignore[attr-defined]
    fuser.clear()
    fuser.add(Frames(person).next(), time.time())
    probe = fuser.fuse().probe
    assert probe is not None and probe.frames == 1
    return probe


def test_a_first_frame_below_tau_is_tried_again_until_the_window_fills(store: Store, config: KioskConfig) -> None:
    ids = enrol(store)
    answers, live = kiosk(store, config)
    first = verification_for(answers.assistant, first_frame(live, ALICE))  # type: ignore[arg-type]
    assert first.presence.state == "unknown" and first.presence.best_score == pytest.approx(0.55, abs=1e-3)
    with Camera(live.fuser, ALICE):
        verification = live.with_fuller_window(first, time.monotonic() + 5.0)
    assert verification.presence.state == "recognised" and verification.presence.user_id == ids["Alice"]
    assert verification.probe is not None and 1 < verification.probe.frames <= FUSE_FRAMES["face"]


def test_a_stranger_waits_at_most_one_window_and_stays_unknown(store: Store, config: KioskConfig) -> None:
    enrol(store)
    answers, live = kiosk(store, config)
    first = verification_for(answers.assistant, first_frame(live, STRANGER))  # type: ignore[arg-type]
    started = time.monotonic()
    with Camera(live.fuser, STRANGER):
        verification = live.with_fuller_window(first, time.monotonic() + 5.0)
        waited = time.monotonic() - started
    assert verification.presence.state == "unknown"
    assert waited < FUSE_MAX_AGE_S["face"] + 0.5
    with Camera(live.fuser, STRANGER):  # and never past the caller's deadline
        started = time.monotonic()
        live.with_fuller_window(first, time.monotonic() + 0.1)
        assert time.monotonic() - started < 0.5


def test_someone_recognised_or_refused_for_another_reason_waits_for_nothing(store: Store, config: KioskConfig) -> None:
    enrol(store)
    answers, live = kiosk(store, config)
    with Camera(live.fuser, ALICE):
        time.sleep(0.4)
    full = verification_for(answers.assistant, live.fuser.fuse().probe)  # type: ignore[arg-type]
    assert full.presence.state == "recognised"
    started = time.monotonic()
    assert live.with_fuller_window(full, time.monotonic() + 5.0) is full
    live.threshold_problem = "no usable face calibration"
    refused = live._checked(first_frame(live, ALICE), 1)  # type: ignore[arg-type]
    assert refused.presence.best_score is None
    assert live.with_fuller_window(refused, time.monotonic() + 5.0) is refused
    assert time.monotonic() - started < 0.2
