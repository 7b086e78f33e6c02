"""The face video as the benchmarks replay it: every frame through the face pipeline, the live fusion window, the
enrolment directions between his two shots, and the enrolment rules compared (bench_video_enrolment,
bench_first_frames)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import cv2
import numpy as np

from bench.sensitive_video import (
    SEGMENT_GAP_S,
    VIDEO_FPS,
    VIDEO_OWNER_MIN,
    ClipFrame,
    evenly_spread,
    owner_segments,
    wizard_gallery,
)
from bench.video_templates import TEMPLATES_PER_PERSON, diverse_templates, quality_weight, weighted_mean
from kiosk.app.live import STEP_UP_FRAMES, STEP_UP_WAIT_S, STEP_UP_WINDOW_S
from kiosk.identity.face import FaceEmbedder
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S
from kiosk.ui.screens.enroll import SAMPLES_NEEDED

CONSISTENCY_MIN_COSINE = 0.4  # ProbeFuser's default
CACHE = Path(__file__).resolve().parent / "cache"


@dataclass(frozen=True)
class Frame:
    """One analysed video frame: the requester's unit embedding (None: no usable face), the face count, whether
    it is the video's person, and the frame's quality weight (bench.video_templates.quality_weight)."""

    index: int
    stamp: float
    vector: np.ndarray | None
    faces_in_view: int
    owner: bool
    weight: float


def analyse_clip(embedder: FaceEmbedder, folder: Path, min_face_px: int) -> list[Frame]:
    """Every frame of the clip through the face pipeline (cached per encoder: the analysis takes minutes)."""
    cache = CACHE / f"video_enrolment_{embedder.model_sha256[:12]}.npz"
    photo = embedder.embed_image(cv2.imread(str(folder / "lin-manuel-miranda.png")))
    photo = photo / np.linalg.norm(photo)
    if cache.exists():
        stored = np.load(cache)
        vectors, faces, weights, valid = stored["vectors"], stored["faces"], stored["weights"], stored["valid"]
    else:
        capture = cv2.VideoCapture(str(folder / "short_hamilton_clip.mp4"))
        rows: list[tuple[np.ndarray | None, int, float]] = []
        while True:
            ok, image = capture.read()
            if not ok:
                break
            analysis = embedder.analyse(image)
            requester = analysis.requester
            weight = 0.0
            if requester is not None:
                verdict = requester.quality
                weight = quality_weight(
                    verdict.sharpness, verdict.size_px, verdict.turn, requester.detection.score, min_face_px
                )
            rows.append((analysis.embedding, analysis.faces_in_view, weight))
        capture.release()
        dimension = embedder.dimension
        vectors = np.stack([v if v is not None else np.zeros(dimension, np.float32) for v, _, _ in rows])
        valid = np.asarray([v is not None for v, _, _ in rows])
        faces = np.asarray([f for _, f, _ in rows])
        weights = np.asarray([w for _, _, w in rows])
        CACHE.mkdir(exist_ok=True)
        np.savez(cache, vectors=vectors, faces=faces, weights=weights, valid=valid)
    frames = []
    for index in range(len(vectors)):
        vector = vectors[index] if valid[index] else None
        owner = vector is not None and float(vector @ photo) >= VIDEO_OWNER_MIN
        frames.append(Frame(index, index / VIDEO_FPS, vector, int(faces[index]), owner, float(weights[index])))
    return frames


def fuse_window(seen: Sequence[Frame], now: float, frames: int, max_age_s: float, weighted: bool) -> Frame | None:
    """ProbeFuser.fuse replayed on `seen` (newest last): the newest good frame and up to frames - 1 earlier ones
    within max_age_s that agree with it, averaged plainly or by quality weight; the result's stamp is the newest
    frame's, its `faces_in_view` the frames fused."""
    good = [f for f in seen if f.vector is not None and now - f.stamp <= max_age_s]
    if not good:
        return None
    newest = good[-1]
    assert newest.vector is not None
    chosen = [newest]
    for frame in reversed(good[:-1]):
        if len(chosen) >= frames:
            break
        assert frame.vector is not None
        if float(frame.vector @ newest.vector) >= CONSISTENCY_MIN_COSINE:
            chosen.append(frame)
    vectors = np.stack([cast(np.ndarray, f.vector) for f in chosen])
    vector = weighted_mean(vectors, [f.weight for f in chosen] if weighted else None)
    return Frame(newest.index, newest.stamp, vector, len(chosen), True, 1.0)


def video_probes(analysed: Sequence[Frame], probed: set[int], weighted: bool) -> dict[str, list[np.ndarray | None]]:
    """The question's probe (FUSE_FRAMES in FUSE_MAX_AGE_S) at every analysed frame showing him among `probed`, and
    the step-up's (STEP_UP_FRAMES in STEP_UP_WINDOW_S, the first with that many frames newer than the ask, else the
    last fresh one by STEP_UP_WAIT_S, as verify_stronger does); None: no fresh probe (a reject)."""
    seen: list[Frame] = []
    longer: list[tuple[float, Frame | None]] = []
    question: list[np.ndarray | None] = []
    asks: list[float] = []
    for frame in analysed:
        if frame.index not in probed:
            continue
        seen.append(frame)
        longer.append((frame.stamp, fuse_window(seen, frame.stamp, STEP_UP_FRAMES, STEP_UP_WINDOW_S, weighted)))
        if frame.owner:
            asks.append(frame.stamp)
            fused = fuse_window(seen, frame.stamp, FUSE_FRAMES["face"], FUSE_MAX_AGE_S["face"], weighted)
            question.append(None if fused is None else fused.vector)
    step_up: list[np.ndarray | None] = []
    for asked_at in asks:
        chosen: Frame | None = None
        for stamp, fused in longer:
            if stamp < asked_at:
                continue
            if stamp > asked_at + STEP_UP_WAIT_S:
                break
            chosen = fused if fused is not None and fused.stamp >= asked_at else None
            if chosen is not None and chosen.faces_in_view >= STEP_UP_FRAMES:
                break
        step_up.append(None if chosen is None else chosen.vector)
    return {"question": question, "step-up": step_up}


EnrolMethod = Callable[[Sequence[Frame], str], np.ndarray]


def _wizard_frames(shot: Sequence[Frame]) -> list[Frame]:
    return evenly_spread([f for f in shot if f.vector is not None and f.faces_in_view == 1], SAMPLES_NEEDED)


def _video_frames(shot: Sequence[Frame]) -> list[Frame]:
    return [f for f in shot if f.vector is not None and f.faces_in_view == 1]


def _stack(frames: Sequence[Frame]) -> np.ndarray:
    return np.stack([cast(np.ndarray, f.vector) for f in frames])


def _today(frames: Sequence[Frame], model_sha256: str) -> np.ndarray:
    clip = [ClipFrame(f.index, f.stamp, f.vector, f.faces_in_view, f.owner) for f in frames]
    return wizard_gallery(clip, model_sha256).vectors


def _everything_evenly(frames: Sequence[Frame], model_sha256: str) -> np.ndarray:
    """Today's gallery rule (Enrolment._gallery, at most MAX_TEMPLATES evenly spread) on every good frame."""
    from kiosk.app.enrolment import Enrolment

    enrolment = Enrolment.__new__(Enrolment)
    return enrolment._gallery(list(_stack(frames)), model_sha256, "face").vectors


VIDEO_METHODS: dict[str, tuple[str, Callable[[Sequence[Frame]], list[Frame]], EnrolMethod]] = {
    "mean": (
        f"one template: mean of the wizard's {SAMPLES_NEEDED} frames",
        _wizard_frames,
        lambda fr, _: weighted_mean(_stack(fr))[None, :],
    ),
    "today": (
        f"today: each of the wizard's {SAMPLES_NEEDED} frames a template",
        _wizard_frames,
        lambda fr, sha: _today(fr, sha),
    ),
    "diverse_wizard": (
        f"new: {TEMPLATES_PER_PERSON} pose-diverse quality-weighted templates of the wizard's {SAMPLES_NEEDED} frames",
        _wizard_frames,
        lambda fr, _: diverse_templates(_stack(fr), [f.weight for f in fr]),
    ),
    "mean_video": (
        "one template: quality-weighted mean of every good enrolment frame (10 frames/s)",
        _video_frames,
        lambda fr, _: weighted_mean(_stack(fr), [f.weight for f in fr])[None, :],
    ),
    "diverse_video_2": (
        "2 pose-diverse quality-weighted templates of every good enrolment frame",
        _video_frames,
        lambda fr, _: diverse_templates(_stack(fr), [f.weight for f in fr], 2),
    ),
    "video_every": (
        "every good enrolment frame (10 frames/s), today's gallery rule (<= 10 templates)",
        _video_frames,
        _everything_evenly,
    ),
    "diverse_video": (
        f"new: {TEMPLATES_PER_PERSON} pose-diverse quality-weighted templates of every good enrolment frame",
        _video_frames,
        lambda fr, _: diverse_templates(_stack(fr), [f.weight for f in fr]),
    ),
}


DIRECTION_LABELS = {
    "main": "enrol first shot, probe later",
    "reverse": "reverse: enrol last, probe first",
    "both": "enrol first half of both shots (two poses), probe second halves",
}


def probe_directions(frames: list[Frame]) -> tuple[list[list[Frame]], dict[str, tuple[list[Frame], set[int]]]]:
    """His shots, and per direction (DIRECTION_LABELS) the enrolment frames and the frame indices probes may use:
    one shot enrols, the other probes; or both poses enrol (the first half of each shot, as a wizard asking for a
    head turn would) and the second halves probe."""
    shots = [
        [f for f in frames if f.index in {c.index for c in seg}]
        for seg in owner_segments(
            [ClipFrame(f.index, f.stamp, f.vector, f.faces_in_view, f.owner) for f in frames], SEGMENT_GAP_S
        )
    ]

    def indices(first: int, last: int) -> set[int]:
        return set(range(first, last + 1))

    halves = [(shot[: len(shot) // 2], shot[len(shot) // 2 :]) for shot in shots]
    directions = {
        "main": (shots[0], indices(shots[1][0].index, frames[-1].index)),
        "reverse": (shots[-1], indices(shots[0][0].index, shots[0][-1].index)),
        "both": (
            [f for first, _ in halves for f in first],
            set().union(*(indices(second[0].index, second[-1].index) for _, second in halves)),
        ),
    }
    return shots, directions
