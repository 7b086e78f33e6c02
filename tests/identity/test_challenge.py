"""The active challenge (blink / head turn) on synthetic landmark sequences."""

from __future__ import annotations

import random

import pytest
from landmarks import mesh, samples

from kiosk.identity.challenge import ActiveChallenge, ChallengeSample, choose_kind
from kiosk.identity.facemesh import eye_aspect_ratio, head_yaw
from kiosk.identity.pad import challenge_sample


def run(kind: str, sequence: list[tuple[float, float]], fps: float = 10.0) -> str:
    challenge = ActiveChallenge(kind, started_at=0.0)  # type: ignore[arg-type]
    for index, (openness, yaw) in enumerate(sequence):
        points = mesh(openness, yaw)
        state = challenge.feed(ChallengeSample(index / fps, eye_aspect_ratio(points), head_yaw(points)))
    return f"{state.status}: {state.message}"


def test_landmark_measures() -> None:
    assert eye_aspect_ratio(mesh(0.3, 0.0)) == pytest.approx(0.3, abs=1e-5)
    assert head_yaw(mesh(0.3, 0.0)) == pytest.approx(0.0, abs=1e-6)
    assert head_yaw(mesh(0.3, 0.5)) == pytest.approx(0.5, abs=1e-5)
    assert head_yaw(mesh(0.3, -2.0)) == -1.0


def test_a_blink_passes() -> None:
    sequence = [(0.30, 0.0)] * 5 + [(0.12, 0.0)] * 2 + [(0.29, 0.0)] * 2
    assert run("blink", sequence).startswith("passed")


def test_open_eyes_only_time_out_and_say_so() -> None:
    outcome = run("blink", [(0.30, 0.0)] * 70)
    assert outcome.startswith("failed") and "not seen" in outcome


def test_eyes_kept_shut_are_not_a_blink() -> None:
    sequence = [(0.30, 0.0)] * 4 + [(0.10, 0.0)] * 15 + [(0.30, 0.0)] * 3
    assert run("blink", sequence).startswith("waiting")


def test_a_photo_with_shut_eyes_never_blinks() -> None:
    assert run("blink", [(0.10, 0.0)] * 70).startswith("failed")


def test_the_asked_head_turn_and_return_passes() -> None:
    sequence = [(0.3, 0.0)] * 3 + [(0.3, 0.2), (0.3, 0.45), (0.3, 0.5), (0.3, 0.3), (0.3, 0.05)]
    assert run("turn-left", sequence).startswith("passed")


def test_the_wrong_direction_does_not_pass() -> None:
    sequence = [(0.3, 0.0)] * 3 + [(0.3, -0.5)] * 3 + [(0.3, 0.0)] * 3
    assert run("turn-left", sequence).startswith("waiting")


def test_a_photo_of_a_turned_head_does_not_pass() -> None:
    """Never frontal first: the photo's constant yaw cannot produce 'frontal, turn, back'."""
    assert run("turn-right", [(0.3, -0.6)] * 70).startswith("failed")


def test_no_face_at_all_times_out_with_that_reason() -> None:
    challenge = ActiveChallenge("blink", started_at=0.0)
    for index in range(80):
        state = challenge.feed(challenge_sample(None, index / 10))
    assert state.status == "failed" and "no face" in state.message


def test_choose_kind_respects_the_policy() -> None:
    rng = random.Random(0)
    assert {choose_kind("blink", rng) for _ in range(20)} == {"blink"}
    assert {choose_kind("turn", rng) for _ in range(40)} == {"turn-left", "turn-right"}
    assert {choose_kind("either", rng) for _ in range(60)} == {"blink", "turn-left", "turn-right"}


def test_eyes_closing_before_the_face_leaves_the_view_are_no_blink() -> None:
    """Seen on the looped face video: a 'closed' frame, then no face (a cut), then open eyes on the next shot."""
    challenge = ActiveChallenge("blink", started_at=0.0)
    sequence = [(0.30, 0.0)] * 4 + [(0.12, 0.0)] + [None] * 4 + [(0.30, 0.0)] * 3
    for index, frame in enumerate(sequence):
        if frame is None:
            state = challenge.feed(ChallengeSample(index / 10, None, None))
        else:
            state = challenge.feed(samples([frame], start=index / 10)[0])
    assert state.status == "waiting", state


def test_eye_openness_of_a_turned_head_neither_sets_the_baseline_nor_blinks() -> None:
    """A profile's eye looks wide (short corner-to-corner): back to frontal, the eyes must not read as shut."""
    turned_frontal_turned = [(0.55, -0.8)] * 4 + [(0.30, 0.0)] * 3 + [(0.55, -0.8)] * 2
    assert run("blink", turned_frontal_turned).startswith("waiting")
    assert run("blink", [(0.55, -0.8)] * 3 + [(0.30, 0.0)] * 4 + [(0.12, 0.0)] * 2 + [(0.30, 0.0)]).startswith("passed")
