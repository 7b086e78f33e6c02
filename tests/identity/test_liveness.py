"""Passive liveness cues one by one on synthetic inputs, the verdict, and its effect on the gate."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
import pytest

from kiosk.identity.gate import PRESENTATION_ATTACK, GateRule, describe, gate
from kiosk.identity.liveness import (
    FROZEN,
    MOIRE,
    PASSIVE,
    RIGID,
    SPECTRAL,
    FrameEvidence,
    LivenessVerdict,
    PassiveLiveness,
    PassiveTuning,
    chroma_peak,
    frame_evidence,
    frozen_score,
    judge,
    nonrigid_motion,
    spectral_peak,
)
from kiosk.identity.probe import Probe
from kiosk.memory.note import Template

SHA = "b" * 64


def natural_texture(size: int = 128, seed: int = 0) -> np.ndarray:
    """A smooth, aperiodic gray texture (blurred noise at several scales), like skin and hair."""
    rng = np.random.default_rng(seed)
    image = np.zeros((size, size), np.float32)
    for sigma in (1.0, 3.0, 9.0):
        image += cv2.GaussianBlur(rng.normal(0, 30, (size, size)).astype(np.float32), (0, 0), sigma) * sigma
    return np.clip(128 + image, 0, 255).astype(np.uint8)


def face_points(seed: int = 0) -> np.ndarray:
    """468 points spread like a face in depth-free 2-D (an ellipse of points), in pixels."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, 468)
    radius = np.sqrt(rng.uniform(0, 1, 468))
    return np.column_stack([200 + 60 * radius * np.cos(angle), 200 + 80 * radius * np.sin(angle)]).astype(np.float32)


def homography(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return cv2.perspectiveTransform(points[None].astype(np.float64), matrix)[0].astype(np.float32)


def evidence(t: float, small: np.ndarray, mesh: np.ndarray | None, spectral: float = 0.5) -> FrameEvidence:
    return FrameEvidence(t, small.astype(np.uint8), small.astype(np.float32), mesh, 60.0, spectral)


# ---- cues ------------------------------------------------------------------------------------------------------


def test_frozen_score_is_zero_for_repeated_frames_and_large_with_sensor_noise() -> None:
    still = natural_texture(64).astype(np.float32)
    assert frozen_score([still] * 5) == 0.0
    rng = np.random.default_rng(1)
    noisy = [still + rng.normal(0, 2.0, still.shape).astype(np.float32) for _ in range(5)]
    assert frozen_score(noisy) > PASSIVE.frozen_max_diff
    assert frozen_score([still]) == float("inf")  # one frame proves nothing


def test_a_planar_motion_leaves_no_residual_but_a_shape_change_does() -> None:
    points = face_points()
    tilts = [
        np.array([[1.0 + 0.02 * k, 0.01 * k, 5.0 * k], [-0.01 * k, 1.0, 3.0 * k], [1e-4 * k, 0, 1]]) for k in range(6)
    ]
    flat = [homography(points, m) for m in tilts]
    residual, motion = nonrigid_motion(flat, inter_ocular=60.0)
    assert residual < 1e-3
    assert motion > PASSIVE.rigid_min_motion

    # The same points on a rounded face (depth up to half the face width) turning 25 degrees: not a plane.
    centred = points - points.mean(axis=0)
    depth = 60.0 * np.sqrt(np.clip(1.0 - (centred[:, 0] / 60) ** 2 - (centred[:, 1] / 80) ** 2, 0, 1))
    turning = []
    for degrees in np.linspace(0, 25, 6):
        angle = np.deg2rad(degrees)
        x = centred[:, 0] * np.cos(angle) + depth * np.sin(angle)
        turning.append(np.column_stack([x, centred[:, 1]]).astype(np.float32) + 200)
    residual, _ = nonrigid_motion(turning, inter_ocular=60.0)
    assert residual > PASSIVE.rigid_max_residual


def test_spectral_peak_is_low_for_natural_texture_and_high_for_a_regular_grid() -> None:
    texture = natural_texture(128)
    assert spectral_peak(texture) < PASSIVE.spectral_max_peak
    ys, xs = np.mgrid[0:128, 0:128]
    grid = texture.astype(np.float32) * (0.85 + 0.15 * np.cos(2 * np.pi * xs / 3.6) * np.cos(2 * np.pi * ys / 3.6))
    assert spectral_peak(grid.astype(np.uint8)) > PASSIVE.spectral_max_peak
    assert spectral_peak(np.zeros((16, 16), np.uint8)) == 0.0  # too small to judge


def colour_face(size: int = 160, seed: int = 0) -> np.ndarray:
    """A skin-coloured BGR region with natural (aperiodic) texture and a gentle red-blue shading."""
    texture = natural_texture(size, seed).astype(np.float32) - 128
    ys = np.linspace(-1, 1, size, dtype=np.float32)[:, None]
    image = np.stack([130 + 0.3 * texture + 10 * ys, 150 + 0.4 * texture, 200 + 0.4 * texture - 10 * ys], axis=2)
    return np.clip(image, 0, 255).astype(np.uint8)


def test_chroma_peak_is_low_for_skin_and_high_for_a_filmed_screen() -> None:
    from bench.pad_attacks import screen_replay

    face = colour_face()
    assert chroma_peak(face) < PASSIVE.chroma_max_peak
    frame = np.full((360, 640, 3), 60, np.uint8)
    frame[100:260, 240:400] = face
    filmed = next(iter(screen_replay([frame], seed=1)))
    assert chroma_peak(filmed[110:250, 250:390]) > PASSIVE.chroma_max_peak
    assert chroma_peak(face[:, :, 0]) == 0.0  # a gray camera has no colour to judge


def test_frame_evidence_measures_the_colour_region() -> None:
    frame = np.full((360, 640, 3), 60, np.uint8)
    frame[100:260, 240:400] = colour_face()
    landmarks = np.array([[290, 160], [350, 160], [320, 190], [295, 220], [345, 220]], np.float32)
    found = frame_evidence(frame, landmarks, 0.0)
    assert 0.0 < found.chroma < PASSIVE.chroma_max_peak
    assert frame_evidence(frame[:, :, 0], landmarks, 0.0).chroma == 0.0


# ---- the verdict -----------------------------------------------------------------------------------------------


def live_window(frames: int = 8) -> list[FrameEvidence]:
    rng = np.random.default_rng(3)
    base = natural_texture(64).astype(np.float32)
    points = face_points()
    out = []
    for k in range(frames):
        mesh = points + rng.normal(0, 2.0, points.shape).astype(np.float32) + np.float32(4 * k)
        out.append(evidence(k / 10, np.clip(base + rng.normal(0, 3, base.shape), 0, 255), mesh))
    return out


def test_judge_calls_a_moving_changing_noisy_face_live() -> None:
    verdict = judge(live_window(), PASSIVE)
    assert verdict.decision == "live", verdict.reason
    assert not verdict.blocking
    assert set(verdict.cues) == {"frozen_diff", "nonrigid_residual", "motion", "spectral_peak", "chroma_peak"}


def test_judge_names_each_cue_that_fires() -> None:
    config = PASSIVE
    window = live_window()
    frozen = [dataclasses.replace(window[0], timestamp=e.timestamp) for e in window]
    verdict = judge(frozen, config)
    assert verdict.decision == "attack" and FROZEN in verdict.fired and verdict.blocking
    assert "does not change" in verdict.reason

    points = face_points()
    flat = [dataclasses.replace(e, mesh_xy=points + np.float32(6 * k)) for k, e in enumerate(window)]
    verdict = judge(flat, config)
    assert verdict.fired == (RIGID,), verdict.reason
    assert "flat picture" in verdict.reason

    screen = [dataclasses.replace(e, spectral=2.0) for e in window]
    verdict = judge(screen, config)
    assert verdict.fired == (SPECTRAL,)
    assert "screen or print" in verdict.reason

    fringes = [dataclasses.replace(e, chroma=1.2) for e in window]
    verdict = judge(fringes, config)
    assert verdict.fired == (MOIRE,) and verdict.blocking
    assert "filmed screen" in verdict.reason


def test_a_still_person_is_not_called_flat() -> None:
    """No motion at all: the rigid cue has nothing to judge (a still person must not be called an attack)."""
    window = live_window()
    points = face_points()
    still = [dataclasses.replace(e, mesh_xy=points) for e in window]
    assert judge(still, PASSIVE).decision == "live"


def test_too_few_frames_is_undecided_and_blocks_only_when_configured() -> None:
    window = live_window(3)
    assert judge(window, PASSIVE).decision == "undecided"
    assert not judge(window, PASSIVE).blocking
    assert judge(window, PassiveTuning(block_undecided=True)).blocking


def test_passive_liveness_judges_only_the_recent_window() -> None:
    config = PassiveTuning(window_s=1.0, min_frames=4)
    monitor = PassiveLiveness(config)
    for item in live_window(10):
        monitor.add(item)
    assert monitor.verdict(now=0.9).frames == 10
    assert monitor.verdict(now=1.5).frames == 5
    assert monitor.verdict(now=5.0).decision == "undecided"
    monitor.clear()
    assert monitor.verdict(now=0.9).frames == 0


# ---- the verdict travels with the probe ------------------------------------------------------------------------


ATTACK = LivenessVerdict("attack", "presentation attack suspected: test", {"frozen_diff": 0.0}, (FROZEN,), 8, True)


def probe(liveness: LivenessVerdict | None) -> Probe:
    return Probe("face", np.array([1.0, 0.0, 0.0], np.float32), SHA, 0.0, frames=5, liveness=liveness)


def templates() -> list[Template]:
    from datetime import UTC, datetime

    return [Template(0, 7, "face", np.array([1.0, 0.0, 0.0], np.float32), SHA, datetime.now(UTC))]


@pytest.mark.parametrize("liveness", [None, LivenessVerdict("live", "liveness ok")])
def test_gate_matches_when_liveness_passes_or_was_not_checked(liveness: LivenessVerdict | None) -> None:
    decision = gate(probe(liveness), templates(), GateRule(0.5))
    assert decision.verified_user_id == 7 and decision.decision == "owner"


def test_gate_refuses_a_probe_judged_an_attack_and_says_why() -> None:
    decision = gate(probe(ATTACK), templates(), GateRule(0.5))
    assert decision.matched_owner_ids == ()
    assert decision.reason == PRESENTATION_ATTACK
    assert decision.decision == "fallback"
    assert "presentation attack suspected" in describe(decision)
    assert gate(probe(None), templates(), GateRule(0.5)).matched_owner_ids == (7,)
