"""Probe fusion and the continuous verifier loop (stub analyser); whom a probe verifies is tests/identity/test_gate."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest
from polling import wait_until

from kiosk.errors import ProbeError
from kiosk.identity.gate import GateRule, gate
from kiosk.identity.sources import ImageFolderSource, LiveSource, SourceState
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S, ContinuousVerifier, ProbeFuser
from kiosk.memory.note import Template

SHA = "a" * 64
DIM = 8


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(DIM, np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def template(user_id: int, vector: np.ndarray, sha: str = SHA, modality: str = "face") -> Template:
    return Template(0, user_id, modality, vector.astype(np.float32), sha, datetime.now(UTC))


# ---- fusion -------------------------------------------------------------------------------------------


def test_fuser_without_frames_says_no_recent_face() -> None:
    fuser = ProbeFuser("face", SHA, clock=lambda: 100.0)
    result = fuser.fuse()
    assert not result.ok and result.reason.startswith("no recent face")
    fuser.add(None, 99.9, faces_in_view=0)
    assert "no face has passed" in fuser.fuse().reason
    with pytest.raises(ProbeError, match="no recent face"):
        fuser.fuse().require()


def test_fuser_ignores_stale_frames_and_says_how_old() -> None:
    fuser = ProbeFuser("face", SHA, max_age_s=1.0)
    fuser.add(unit(1, 0), timestamp=10.0)
    result = fuser.fuse(now=13.5)
    assert result.probe is None
    assert "3.5 s ago" in result.reason
    assert fuser.fuse(now=10.9).ok


def test_fuser_averages_the_last_fresh_frames() -> None:
    fuser = ProbeFuser("face", SHA, fuse_frames=3, max_age_s=1.0)
    fuser.add(unit(0, 1), timestamp=8.0)  # stale: left out
    vectors = [unit(1, 0.1), unit(1, 0.3), unit(1, -0.2), unit(1, 0.5)]
    for i, vector in enumerate(vectors):
        fuser.add(vector, timestamp=9.5 + 0.1 * i)
    result = fuser.fuse(now=10.0)
    probe = result.require()
    expected = np.mean(vectors[-3:], axis=0)
    expected /= np.linalg.norm(expected)
    np.testing.assert_allclose(probe.vector, expected, atol=1e-6)
    assert probe.vector.dtype == np.float32
    assert np.linalg.norm(probe.vector) == pytest.approx(1.0, abs=1e-6)
    assert probe.frames == 3 and result.candidates == 4
    assert probe.captured_at == pytest.approx(9.8)
    assert probe.model_sha256 == SHA and probe.modality == "face" and probe.faces_in_view == 1


def test_fuser_drops_a_different_person_and_flags_two_faces() -> None:
    fuser = ProbeFuser("face", SHA, fuse_frames=5, consistency_min_cosine=0.4)
    fuser.add(unit(0, 1), timestamp=9.6)  # someone else, just before
    fuser.add(unit(1, 0.1), timestamp=9.7)
    fuser.add(None, timestamp=9.8, faces_in_view=2)  # a frame where two faces were in view
    fuser.add(unit(1, 0), timestamp=9.9)
    result = fuser.fuse(now=10.0)
    assert result.dropped_inconsistent == 1
    probe = result.require()
    assert probe.frames == 2
    assert float(probe.vector @ unit(1, 0)) > 0.99
    assert probe.faces_in_view == 2
    assert fuser.fuse(now=10.85).require().faces_in_view == 1  # that frame aged out


def test_fuser_rejects_bad_vectors() -> None:
    fuser = ProbeFuser("face", SHA)
    with pytest.raises(ProbeError, match="NaN"):
        fuser.add(np.full(DIM, np.nan), 1.0)
    with pytest.raises(ProbeError, match="zero"):
        fuser.add(np.zeros(DIM), 1.0)
    fuser.add(unit(1), 1.0)
    with pytest.raises(ProbeError, match="4 values"):
        fuser.add(np.ones(4), 1.0)


def test_fuser_for_modality_uses_that_modalitys_window() -> None:
    face = ProbeFuser.for_modality("face", SHA)
    assert (face.modality, face.fuse_frames, face.max_age_s) == ("face", FUSE_FRAMES["face"], FUSE_MAX_AGE_S["face"])
    palm = ProbeFuser.for_modality("palm", SHA)
    assert (palm.modality, palm.fuse_frames, palm.max_age_s) == ("palm", 3, 2.0)


# ---- continuous verifier ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StubAnalysis:
    embedding: np.ndarray | None
    faces_in_view: int


def analyse_by_brightness(image: np.ndarray) -> StubAnalysis:
    """Stub for FacePipeline.analyse: brightness 0 => no face, 13 => crash, 99 => two faces, else a person."""
    level = int(image.reshape(-1)[0])
    if level == 0:
        return StubAnalysis(None, 0)
    if level == 13:
        raise RuntimeError("analyser bug")
    if level == 99:
        return StubAnalysis(unit(1, 0), 2)
    return StubAnalysis(unit(1, level / 100), 1)


def _folder(tmp_path: Path, levels: list[int]) -> Path:
    folder = tmp_path / "frames"
    folder.mkdir()
    for i, level in enumerate(levels):
        cv2.imwrite(str(folder / f"{i:03d}.png"), np.full((16, 16), level, np.uint8))
    return folder


def test_continuous_verifier_feeds_the_fuser_and_survives_bad_frames(tmp_path: Path) -> None:
    source = ImageFolderSource(_folder(tmp_path, [10, 13, 0, 20, 30]), loop=True, interval_s=0.02)
    seen: list[int] = []
    fuser = ProbeFuser("face", SHA, fuse_frames=3, max_age_s=1.0)
    verifier = ContinuousVerifier(source, analyse_by_brightness, fuser, on_analysis=lambda a: seen.append(1))
    source.start()
    with verifier:
        assert wait_until(lambda: verifier.errors >= 1 and verifier.analysed >= 10, 5)
        result = verifier.probe()
        latest = verifier.latest()
    source.stop()
    assert result.ok, result.reason
    assert result.require().frames == 3
    assert latest is not None and latest.elapsed_ms >= 0
    assert len(seen) == verifier.analysed
    assert verifier.rate() > 0
    errors = [o for o in fuser.observations() if o.vector is None]
    assert errors  # the crashing and empty frames were recorded as "no face", not lost


def test_continuous_verifier_reports_a_lost_camera() -> None:
    state = {"plugged": True}

    class Cam:
        def isOpened(self) -> bool:
            return state["plugged"]

        def read(self) -> tuple[bool, np.ndarray | None]:
            time.sleep(0.01)
            return (True, np.full((8, 8, 3), 50, np.uint8)) if state["plugged"] else (False, None)

        def release(self) -> None:
            pass

        def get(self, prop_id: int) -> float:
            return 0.0

    source = LiveSource("camera fake", Cam, max_backoff_s=0.1, initial_backoff_s=0.05).start()
    fuser = ProbeFuser("face", SHA, max_age_s=0.3)
    with ContinuousVerifier(source, analyse_by_brightness, fuser) as verifier:
        assert wait_until(lambda: verifier.probe().ok, 3)
        state["plugged"] = False
        assert wait_until(lambda: source.state == SourceState.RECONNECTING, 3)
        assert wait_until(lambda: not verifier.probe().ok, 3)
        assert "camera fake" in verifier.probe().reason and "no recent face" in verifier.probe().reason
        state["plugged"] = True
        assert wait_until(lambda: verifier.probe().ok, 5)
    assert source.stop()


def test_verifier_stop_joins_its_thread(tmp_path: Path) -> None:
    source = ImageFolderSource(_folder(tmp_path, [10]), loop=False, interval_s=0.01).start()
    verifier = ContinuousVerifier(source, analyse_by_brightness, ProbeFuser("face", SHA)).start()
    assert wait_until(lambda: verifier.analysed >= 1, 3)
    assert verifier.stop(timeout=2.0, stop_source=True)


# ---- real pipeline on the face video -----------------------------------------------------------------


@pytest.fixture(scope="module")
def face_embedder(base_config: object) -> object:
    from kiosk.identity.face import load_face_embedder

    return load_face_embedder(base_config)  # type: ignore[arg-type]


@pytest.mark.real_models
@pytest.mark.real_data
def test_real_verifier_recognises_the_owner_and_not_the_impostor(data_dir: Path, face_embedder: object) -> None:
    from kiosk.identity.sources import StillImageSource, VideoFileSource, read_image

    folder = data_dir / "face_video"
    embed = face_embedder.embed_image  # type: ignore[attr-defined]
    sha = face_embedder.model_sha256  # type: ignore[attr-defined]
    enrolled = [
        template(1, embed(read_image(folder / "lin-manuel-miranda.png")), sha=sha),
        template(2, embed(read_image(folder / "alex-lacamoire.png")), sha=sha),
    ]
    rule = GateRule(0.45)  # stand-in for the shipped LFW calibration; genuine scores here are ~0.55-0.7, impostor < 0.2

    # the clip plays 3x faster than real time: Lin is on stage from about 2.8 s to 6 s of the 10 s clip
    source = VideoFileSource(folder / "short_hamilton_clip.mp4", loop=True, speed=3.0).start()
    fuser = ProbeFuser("face", sha, fuse_frames=5, max_age_s=1.0)
    decisions: list[tuple[str, int | None]] = []
    with ContinuousVerifier(source, face_embedder.analyse, fuser) as verifier:  # type: ignore[attr-defined]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(d == ("matched", 1) for d in decisions):
            result = verifier.probe()
            if result.ok:
                outcome = gate(result.require(), enrolled, rule)
                decisions.append((outcome.reason, outcome.verified_user_id))
            time.sleep(0.05)
        latest = verifier.latest()
    source.stop()
    assert ("matched", 1) in decisions, decisions[-5:]
    assert all(user != 2 for _, user in decisions)  # never mistaken for the other person
    assert latest is not None and latest.error is None
    assert verifier.analysed > 10

    # the impostor's photo as the camera: a probe, but no match against Lin alone
    still = StillImageSource(folder / "alex-lacamoire.png", interval_s=0.05).start()
    with ContinuousVerifier(still, face_embedder.analyse, ProbeFuser("face", sha)) as photo:  # type: ignore[attr-defined]
        assert wait_until(lambda: photo.probe().ok, 15)
        probe = photo.probe().require()
    still.stop()
    assert gate(probe, enrolled[:1], rule).reason == "no match"
    assert gate(probe, enrolled, rule).verified_user_id == 2
