"""Live probes: fuse the last good frames into one probe, continuously, off the GUI thread.

`ProbeFuser` holds the embeddings of recent analysed frames; `fuse()` averages the last few fresh ones into
one L2-normalised `Probe`, or says plainly why there is none. `ContinuousVerifier` runs a frame source and an
analyser (the face pipeline) on a worker thread and keeps the fuser fed; it is Qt-free so the application
wraps it and the CLI and tests drive it directly. Whom a probe verifies is decided by kiosk.identity.gate.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from kiosk.errors import KioskError, ProbeError
from kiosk.identity.probe import Modality, Probe
from kiosk.identity.sources import Frame, FrameSource, SourceState

log = logging.getLogger(__name__)


def l2_normalise(vector: np.ndarray) -> np.ndarray:
    """A float32 unit vector; ProbeError for NaN, infinite or zero vectors (never a silent garbage probe)."""
    flat = np.asarray(vector, dtype=np.float32).reshape(-1)
    if flat.size == 0 or not np.all(np.isfinite(flat)):
        raise ProbeError("embedding is empty or holds NaN/inf values", "the encoder produced no usable vector")
    norm = float(np.linalg.norm(flat))
    if norm < 1e-12:
        raise ProbeError("embedding is the zero vector", "the encoder produced no usable vector")
    return flat / norm


# Recent good frames fused into one probe, and the oldest frame age (s) a probe may include. A palm scanner
# delivers fewer, slower frames than the face camera.
FUSE_FRAMES: dict[Modality, int] = {"face": 5, "palm": 3}
FUSE_MAX_AGE_S: dict[Modality, float] = {"face": 1.0, "palm": 2.0}


# ---- fusion ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """One analysed frame: the requester's embedding (None: no face passed the gates) and the face count."""

    timestamp: float
    vector: np.ndarray | None
    faces_in_view: int


@dataclass(frozen=True)
class FuseResult:
    probe: Probe | None
    reason: str  # "ok" or why there is no probe ("no recent face: ...")
    candidates: int = 0  # fresh embeddings considered
    dropped_inconsistent: int = 0  # fresh embeddings left out because they look like another person

    @property
    def ok(self) -> bool:
        return self.probe is not None

    def require(self) -> Probe:
        """The probe, or a ProbeError carrying the reason (for callers that cannot go on without one)."""
        if self.probe is None:
            raise ProbeError(self.reason, "stand in front of the camera, facing it, and try again")
        return self.probe


class ProbeFuser:
    """Keeps the latest observations and fuses the freshest good embeddings into one probe.

    Fusion averages at most `fuse_frames` embeddings younger than `max_age_s`. Embeddings that disagree with
    the newest one (cosine below `consistency_min_cosine`) are left out, so a person swap inside the window
    never yields a blend of two faces. `faces_in_view` of the probe is the largest face count seen in the
    window: one frame with two clear faces is enough to hide personal memory.
    """

    def __init__(
        self,
        modality: Modality,
        model_sha256: str,
        *,
        fuse_frames: int = 5,
        max_age_s: float = 1.0,
        consistency_min_cosine: float = 0.4,
        history: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if fuse_frames < 1:
            raise ValueError("fuse_frames must be at least 1")
        self.modality: Modality = modality
        self.model_sha256 = model_sha256
        self.fuse_frames = fuse_frames
        self.max_age_s = max_age_s
        self.consistency_min_cosine = consistency_min_cosine
        self._clock = clock
        self._observations: deque[Observation] = deque(maxlen=history)
        self._lock = threading.Lock()
        self._dimension: int | None = None

    @classmethod
    def for_modality(cls, modality: Modality, model_sha256: str) -> ProbeFuser:
        """The kiosk's fusion window for `modality` (FUSE_FRAMES, FUSE_MAX_AGE_S)."""
        return cls(modality, model_sha256, fuse_frames=FUSE_FRAMES[modality], max_age_s=FUSE_MAX_AGE_S[modality])

    def add(self, vector: np.ndarray | None, timestamp: float, faces_in_view: int = 1) -> None:
        """Record one analysed frame; `vector` None means no face passed the gates in that frame."""
        unit = None
        if vector is not None:
            unit = l2_normalise(vector)
            if self._dimension is not None and unit.shape[0] != self._dimension:
                raise ProbeError(
                    f"embedding has {unit.shape[0]} values, earlier ones had {self._dimension}",
                    "the encoder changed while running; restart the verifier",
                )
            self._dimension = unit.shape[0]
        with self._lock:
            self._observations.append(Observation(timestamp, unit, max(0, int(faces_in_view))))

    def clear(self) -> None:
        with self._lock:
            self._observations.clear()

    def observations(self) -> list[Observation]:
        with self._lock:
            return list(self._observations)

    def fuse(self, now: float | None = None) -> FuseResult:
        now = self._clock() if now is None else now
        observations = self.observations()
        if not observations:
            return FuseResult(None, "no recent face: nothing has been analysed yet")
        fresh = [o for o in observations if now - o.timestamp <= self.max_age_s]
        good = [o for o in fresh if o.vector is not None]
        if not good:
            last_good = next((o for o in reversed(observations) if o.vector is not None), None)
            if last_good is None:
                why = "no face has passed the quality gates yet"
            else:
                why = f"the last usable face was {now - last_good.timestamp:.1f} s ago"
            return FuseResult(None, f"no recent face: {why} (window {self.max_age_s:.1f} s)")
        newest = good[-1]
        assert newest.vector is not None
        chosen: list[np.ndarray] = [newest.vector]
        dropped = 0
        for observation in reversed(good[:-1]):
            if len(chosen) >= self.fuse_frames:
                break
            assert observation.vector is not None
            if float(observation.vector @ newest.vector) >= self.consistency_min_cosine:
                chosen.append(observation.vector)
            else:
                dropped += 1
        fused = l2_normalise(np.mean(np.stack(chosen), axis=0))
        faces = max(o.faces_in_view for o in fresh)
        probe = Probe(
            modality=self.modality,
            vector=fused,
            model_sha256=self.model_sha256,
            captured_at=newest.timestamp,
            frames=len(chosen),
            faces_in_view=max(1, faces),
        )
        return FuseResult(probe, "ok", candidates=len(good), dropped_inconsistent=dropped)


# ---- continuous verification ----------------------------------------------------------------------------


class FrameAnalysis(Protocol):
    """What the verifier needs from an analyser result (the face pipeline's analysis fits)."""

    @property
    def embedding(self) -> np.ndarray | None: ...  # the requester's embedding, None when no usable face
    @property
    def faces_in_view(self) -> int: ...


@dataclass(frozen=True)
class AnalysedFrame:
    """The latest analysis for the UI badge / face box, with the frame it came from."""

    frame: Frame
    analysis: Any | None  # the analyser's result object (None when it raised)
    error: str | None  # the analyser's reason when it raised (bad frame, model error...)
    elapsed_ms: float


class ContinuousVerifier:
    """Analyses the newest frame of a source on a worker thread and feeds a ProbeFuser.

    The analyser is injected (the face pipeline's `analyse`, or a stub in tests). Whatever one frame does
    (an exception, a corrupt image) is recorded in `latest()` and the loop goes on. A consumer that needs
    to know when a frame has been analysed can pass `on_analysis` (called on the worker thread).
    """

    def __init__(
        self,
        source: FrameSource,
        analyse: Callable[[np.ndarray], Any],
        fuser: ProbeFuser,
        *,
        on_analysis: Callable[[AnalysedFrame], None] | None = None,
        idle_wait_s: float = 0.5,
    ) -> None:
        self.source = source
        self.fuser = fuser
        self._analyse = analyse
        self._on_analysis = on_analysis
        self._idle_wait_s = idle_wait_s
        self._latest: AnalysedFrame | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.analysed = 0
        self.errors = 0
        self._durations: deque[float] = deque(maxlen=120)
        self._finished_at: deque[float] = deque(maxlen=120)

    def start(self) -> ContinuousVerifier:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"verifier:{self.source.name}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0, stop_source: bool = False) -> bool:
        self._stop.set()
        ended = True
        if self._thread is not None:
            self._thread.join(timeout)
            ended = not self._thread.is_alive()
        if stop_source:
            ended = self.source.stop(timeout) and ended
        return ended

    def __enter__(self) -> ContinuousVerifier:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def latest(self) -> AnalysedFrame | None:
        """The most recent analysis (never blocks)."""
        return self._latest

    def probe(self, now: float | None = None) -> FuseResult:
        """A fresh probe from the last good frames, or the reason there is none (stale camera included)."""
        result = self.fuser.fuse(now)
        if result.ok:
            return result
        state = self.source.state
        if state in (SourceState.RECONNECTING, SourceState.FAILED, SourceState.ENDED):
            return FuseResult(None, f"{result.reason}; camera: {self.source.message}")
        return result

    def rate(self) -> float:
        """Analysed frames per second over the recent window."""
        stamps = list(self._finished_at)
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return 0.0
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])

    def durations_ms(self) -> Sequence[float]:
        return list(self._durations)

    def _run(self) -> None:
        last_index = -1
        while not self._stop.is_set():
            frame = self.source.wait_for_frame(last_index, self._idle_wait_s)
            if frame is None:
                if self.source.state in (SourceState.ENDED, SourceState.FAILED):
                    self._stop.wait(self._idle_wait_s)  # keep serving latest()/probe(); the window ages out
                continue
            last_index = frame.index
            self._process(frame)

    def _process(self, frame: Frame) -> None:
        started = time.perf_counter()
        analysis: Any | None = None
        error: str | None = None
        try:
            analysis = self._analyse(frame.image)
            embedding = getattr(analysis, "embedding", None)
            faces = int(getattr(analysis, "faces_in_view", 1 if embedding is not None else 0))
            self.fuser.add(embedding, frame.timestamp, faces)
        except KioskError as exc:
            error = exc.one_line()
            self.fuser.add(None, frame.timestamp, 0)
        except Exception as exc:  # one bad frame must not stop the kiosk; the reason is shown and logged
            log.exception("analyser failed on frame %d", frame.index)
            error = f"{type(exc).__name__}: {exc}"
            self.fuser.add(None, frame.timestamp, 0)
        elapsed = (time.perf_counter() - started) * 1000.0
        self.analysed += 1
        if error is not None:
            self.errors += 1
        self._durations.append(elapsed)
        self._finished_at.append(time.monotonic())
        result = AnalysedFrame(frame, analysis, error, elapsed)
        self._latest = result
        if self._on_analysis is not None:
            try:
                self._on_analysis(result)
            except Exception:
                log.exception("on_analysis callback failed")
