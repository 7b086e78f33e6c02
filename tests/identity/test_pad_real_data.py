"""Presentation-attack detection on the real face video: bona fide windows pass, replayed stills and printed photos
fail, the head-turn challenge passes on the real head turn and fails on a photo. Skips without the data."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import cv2
import numpy as np
import pytest

from bench import pad_attacks
from kiosk.config import KioskConfig
from kiosk.identity.challenge import ActiveChallenge
from kiosk.identity.detect import Detector, create_detector
from kiosk.identity.facemesh import FaceMesh
from kiosk.identity.liveness import (
    FROZEN,
    MOIRE,
    PASSIVE,
    RIGID,
    FrameEvidence,
    LivenessVerdict,
    frame_evidence,
    judge,
)
from kiosk.identity.pad import challenge_sample, usable_mesh
from kiosk.models import ModelStore

VIDEO = "face_video/short_hamilton_clip.mp4"
PERFORMER = range(85, 212)  # the shot where the performer faces the camera, turns right and back


@pytest.fixture(scope="module")
def video(data_dir: Path) -> list[np.ndarray]:
    path = data_dir / VIDEO
    if not path.is_file():
        pytest.skip(f"face video not found at {path}")
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    return frames


@pytest.fixture(scope="module")
def detector(base_config: KioskConfig) -> Detector:
    return create_detector(base_config)


@pytest.fixture(scope="module")
def mesh(model_store: ModelStore) -> FaceMesh:
    return FaceMesh(model_store.ensure("face-landmark"))


def analyse(frames: Iterable[np.ndarray], detector: Detector, mesh: FaceMesh) -> tuple[list[FrameEvidence], list]:
    evidence, meshes = [], []
    for index, frame in enumerate(frames):
        faces = detector.detect(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
        if not faces:
            meshes.append(None)
            continue
        face = max(faces, key=lambda f: f.side)
        found = usable_mesh(mesh, frame, face.landmarks)
        meshes.append(found)
        evidence.append(frame_evidence(frame, face.landmarks, index / 10, found.xy if found is not None else None))
    return evidence, meshes


def verdict(frames: Iterable[np.ndarray], detector: Detector, mesh: FaceMesh) -> LivenessVerdict:
    return judge(analyse(frames, detector, mesh)[0])


def test_the_real_video_is_live(video, detector, mesh) -> None:  # type: ignore[no-untyped-def]
    for start in (PERFORMER.start, PERFORMER.start + 60):
        result = verdict(video[start : start + 60 : 3], detector, mesh)
        assert result.decision == "live", result.reason
        assert result.frames >= PASSIVE.min_frames


def test_a_replayed_still_frame_is_an_attack(video, detector, mesh) -> None:  # type: ignore[no-untyped-def]
    result = verdict(pad_attacks.frozen_still(video[130], 20), detector, mesh)
    assert result.decision == "attack" and FROZEN in result.fired, result.reason
    assert result.blocking


@pytest.mark.parametrize("seed", [1, 2])
def test_the_video_replayed_off_a_screen_shows_colour_moire(video, detector, mesh, seed: int) -> None:  # type: ignore[no-untyped-def]
    """The bona fide windows above stay live with the same cue; the synthetic screen replay of them does not."""
    for start in (PERFORMER.start, PERFORMER.start + 60):
        replayed = pad_attacks.screen_replay(video[start : start + 60 : 3], seed=seed)
        result = verdict(replayed, detector, mesh)
        assert result.decision == "attack" and MOIRE in result.fired, result.cues
        assert "filmed screen" in result.reason


def test_a_printed_photo_waved_at_the_camera_is_an_attack(video, detector, mesh) -> None:  # type: ignore[no-untyped-def]
    result = verdict(pad_attacks.printed_photo(video[130], 20, seed=1), detector, mesh)
    assert result.decision == "attack", result.cues
    assert RIGID in result.fired
    assert "flat picture" in result.reason


def test_a_printed_lfw_face_is_an_attack(data_dir: Path, detector, mesh) -> None:  # type: ignore[no-untyped-def]
    image = cv2.imread(str(data_dir / "lfw3d_frontalized/images/Abel_Pacheco/Abel_Pacheco_0001.jpg"))
    if image is None:
        pytest.skip("LFW3D image not found")
    frame = np.full((360, 640, 3), 40, np.uint8)
    frame[80:280, 220:420] = cv2.resize(image, (200, 200), interpolation=cv2.INTER_CUBIC)
    result = verdict(pad_attacks.printed_photo(frame, 20, seed=2), detector, mesh)
    assert result.decision == "attack", result.cues


def test_the_head_turn_challenge_passes_on_the_real_turn_and_fails_on_a_photo(video, detector, mesh) -> None:  # type: ignore[no-untyped-def]
    def outcome(frames: list[np.ndarray], kind: str) -> str:
        _evidence, meshes = analyse(frames, detector, mesh)
        challenge = ActiveChallenge(kind, started_at=0.0)  # type: ignore[arg-type]
        for index, found in enumerate(meshes):
            state = challenge.feed(challenge_sample(found, index / 10))
        return state.status

    real_turn = video[95:161:3]  # frontal, turned to his right (image left), back to frontal
    assert outcome(real_turn, "turn-right") == "passed"
    assert outcome(real_turn, "turn-left") != "passed"
    photo = list(pad_attacks.printed_photo(video[95], 22, seed=3))
    assert outcome(photo, "turn-right") != "passed"
    assert outcome(photo, "blink") != "passed"
