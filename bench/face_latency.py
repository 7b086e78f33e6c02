"""Per-stage latency of face pipelines on video frames: read the frames, time FacePipeline and the dlib peer."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench.common import percentiles_ms
from kiosk.identity.face import FacePipeline


def video_frames(path: Path, limit: int) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames: list[np.ndarray] = []
    while len(frames) < limit:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return frames


def pipeline_latency(pipeline: FacePipeline, frames: Sequence[np.ndarray]) -> dict[str, Any]:
    stages: dict[str, list[float]] = {"detect": [], "quality": [], "align": [], "embed": [], "probe": []}
    faces, requesters = 0, 0
    pipeline.analyse(frames[0])
    for frame in frames:
        analysis = pipeline.analyse(frame)
        faces += len(analysis.faces)
        for stage in ("detect", "quality", "align", "embed"):
            if stage in analysis.timings_ms:
                stages[stage].append(analysis.timings_ms[stage] / 1000)
        if analysis.embedding is not None:
            requesters += 1
            stages["probe"].append(analysis.timings_ms["total"] / 1000)
    return {
        "frames": len(frames),
        "faces": faces,
        "frames_with_requester": requesters,
        **{stage: percentiles_ms(samples) for stage, samples in stages.items() if samples},
    }


def dlib_latency(frames: Sequence[np.ndarray]) -> dict[str, Any]:
    import face_recognition
    import face_recognition.api as api

    stages: dict[str, list[float]] = {"detect": [], "landmarks": [], "embed": [], "probe": []}
    faces = 0
    for frame in frames:
        rgb = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
        start = time.perf_counter()
        locations = face_recognition.face_locations(rgb)  # HOG, upsample 1 (the library default)
        stages["detect"].append(time.perf_counter() - start)
        faces += len(locations)
        if not locations:
            continue
        largest = max(locations, key=lambda loc: (loc[2] - loc[0]) * (loc[1] - loc[3]))
        mark = time.perf_counter()
        landmarks = api._raw_face_landmarks(rgb, [largest], model="small")
        stages["landmarks"].append(time.perf_counter() - mark)
        mark = time.perf_counter()
        np.array(api.face_encoder.compute_face_descriptor(rgb, landmarks[0], 1))
        stages["embed"].append(time.perf_counter() - mark)
        stages["probe"].append(time.perf_counter() - start)
    return {"frames": len(frames), "faces": faces, **{k: percentiles_ms(v) for k, v in stages.items() if v}}
