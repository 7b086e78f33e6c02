"""Passive presentation-attack detection at query time: cues computed on CPU over the last second or two of frames.

Each analysed frame with a usable face leaves `FrameEvidence`: the face region in gray at native resolution and,
when the Face Mesh ran, its 468 landmarks. Over a window of such frames three cues are measured:

- frozen: consecutive face regions (nearly) identical. A camera always adds sensor noise and a person always moves
  a little; an injected still image or a frozen stream does not.
- rigid: how far the landmarks move *beyond* one planar projective motion (a homography fitted to all 468 points,
  residual in inter-ocular distances). A printed photo, however it is waved, moves as a plane; a face turns in
  depth, blinks and talks. A real person holding perfectly still also shows little residual, so this cue only
  fires when the face did move (rigidly) and its shape did not change.
- spectral: isolated peaks in the face region's spectrum (amplitude far above the ring's median at the same
  frequency). Natural skin and hair give a smooth 1/f spectrum; a screen's pixel grid seen by a camera (moire),
  refresh banding and printers' halftone dots give periodic patterns.
- moire: the same peak measure on the face's colour difference (red minus blue) at low frequencies. A screen's
  red, green and blue sub-pixels sit side by side; filmed by a camera whose pixels do not line up with them they
  beat into coarse colour fringes, while skin's colour varies smoothly.

The verdict is "live", "attack" (with the cue(s) and their values as the reason) or "undecided" (not enough frames
in the window yet). The thresholds are `PassiveTuning`'s; `bench/bench_pad.py` reports APCER/BPCER at them.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import cv2
import numpy as np

from kiosk.identity.align import landmark_box

LivenessDecision = Literal["live", "attack", "undecided"]
FROZEN, RIGID, SPECTRAL, MOIRE = "frozen", "rigid", "spectral", "moire"
REGION_MAX = 160  # face region side (pixels, native resolution) analysed for spectral peaks
FROZEN_SIZE = 64  # face region resized to this side for the frame-difference cue
SPECTRAL_BAND = (0.12, 0.48)  # band of radial frequency (cycles/pixel, Nyquist = 0.5) searched for peaks
CHROMA_BAND = (0.03, 0.2)  # colour moire beats sit low: a sub-pixel period near 1 camera pixel aliases to ~0.05-0.15


@dataclass(frozen=True)
class PassiveTuning:
    """The passive cues' window and thresholds."""

    window_s: float = 2.0  # seconds of recent frames the cues look at
    min_frames: int = 6  # frames with a face needed in the window before the cues decide
    frozen_max_diff: float = 0.35  # median gray difference of consecutive face regions below which the feed is frozen
    rigid_min_motion: float = 0.05  # landmark motion (inter-ocular distances) above which the rigid cue may judge
    # landmark shape change beyond one planar homography (inter-ocular distances) below which a moving face is a
    # flat picture
    rigid_max_residual: float = 0.06
    # median spectral peak excess (log10 amplitude over its ring) above which moire, banding or halftone is suspected
    spectral_max_peak: float = 1.25
    # the same on the red-minus-blue difference at low frequencies: a filmed screen's RGB sub-pixel grid
    chroma_max_peak: float = 0.8
    block_undecided: bool = False  # hide personal memory while the cues have too few frames to decide


PASSIVE = PassiveTuning()


@dataclass(frozen=True)
class FrameEvidence:
    timestamp: float
    region: np.ndarray  # gray uint8 face region at native resolution (at most REGION_MAX square)
    small: np.ndarray  # the same region resized to FROZEN_SIZE, float32
    mesh_xy: np.ndarray | None  # (468, 2) Face Mesh points in frame pixels, None when the mesh was not run/found
    inter_ocular: float  # pixels, from the detector's eye landmarks
    spectral: float  # spectral_peak of the region, computed once on the analysis thread (not at query time)
    chroma: float = 0.0  # chroma_peak of the colour region (0 for a gray camera)


def frame_evidence(
    bgr: np.ndarray, landmarks: np.ndarray, timestamp: float, mesh_xy: np.ndarray | None = None
) -> FrameEvidence:
    """Evidence of one frame from the detector's five landmarks (and the mesh, when available)."""
    x, y, w, h = landmark_box(landmarks, 0.0)
    side = min(max(w, h), REGION_MAX)
    centre_x, centre_y = x + w / 2, y + h / 2
    height, width = bgr.shape[:2]
    x1 = int(np.clip(round(centre_x - side / 2), 0, max(width - 1, 0)))
    y1 = int(np.clip(round(centre_y - side / 2), 0, max(height - 1, 0)))
    x2, y2 = min(width, x1 + int(side)), min(height, y1 + int(side))
    region = bgr[y1:y2, x1:x2]
    colour = region.ndim == 3 and region.shape[2] == 3 and region.size > 0
    gray = cv2.cvtColor(region, cv2.COLOR_BGR2GRAY) if region.ndim == 3 else region
    gray = np.ascontiguousarray(gray if gray.size else np.zeros((8, 8), np.uint8))
    small = cv2.resize(gray, (FROZEN_SIZE, FROZEN_SIZE), interpolation=cv2.INTER_AREA).astype(np.float32)
    inter_ocular = float(np.linalg.norm(landmarks[1] - landmarks[0]))
    chroma = chroma_peak(region) if colour else 0.0
    return FrameEvidence(timestamp, gray, small, mesh_xy, max(inter_ocular, 1.0), spectral_peak(gray), chroma)


# ---- the cues ---------------------------------------------------------------------------------------------


def frozen_score(smalls: Sequence[np.ndarray]) -> float:
    """Median mean-absolute gray difference between consecutive face regions (gray levels); ~0 for a still image."""
    if len(smalls) < 2:
        return float("inf")
    diffs = [float(np.mean(np.abs(b - a))) for a, b in itertools.pairwise(smalls)]
    return float(np.median(diffs))


def nonrigid_motion(meshes: Sequence[np.ndarray], inter_ocular: float) -> tuple[float, float]:
    """(residual, motion) in inter-ocular distances over the window.

    residual: the largest RMS distance between a frame's landmarks and the first frame's landmarks mapped by the
    best homography between them (what no planar motion explains). motion: the largest RMS landmark displacement
    from the first frame (how much the face moved at all).
    """
    if len(meshes) < 2 or inter_ocular <= 0:
        return 0.0, 0.0
    first = meshes[0].astype(np.float64)
    residual = motion = 0.0
    for other in meshes[1:]:
        target = other.astype(np.float64)
        homography, _ = cv2.findHomography(first, target, 0)
        if homography is None:
            continue
        mapped = cv2.perspectiveTransform(first[None], homography)[0]
        residual = max(residual, float(np.sqrt(np.mean(np.sum((mapped - target) ** 2, axis=1)))))
        motion = max(motion, float(np.sqrt(np.mean(np.sum((target - first) ** 2, axis=1)))))
    return residual / inter_ocular, motion / inter_ocular


def spectral_peak(region: np.ndarray) -> float:
    """How far the strongest periodic component of a gray face region stands above its frequency ring (log10 units).

    The region is windowed (Hann) and transformed; each frequency bin's log amplitude is compared with the mean
    of its ring (same radial frequency), and the largest excess in SPECTRAL_BAND is returned. A smooth natural
    spectrum gives small excesses (< ~1); a regular grid or halftone gives a sharp peak (> ~1.3).
    """
    gray = region.astype(np.float32)
    if gray.ndim == 3:
        gray = np.asarray(cv2.cvtColor(gray, cv2.COLOR_BGR2GRAY), dtype=np.float32)
    return _peak_excess(gray, SPECTRAL_BAND)


def chroma_peak(region: np.ndarray) -> float:
    """`spectral_peak`'s measure on the red-minus-blue difference of a BGR face region, in CHROMA_BAND."""
    if region.ndim != 3 or region.shape[2] < 3:
        return 0.0
    colour = region.astype(np.float32)
    return _peak_excess(colour[:, :, 2] - colour[:, :, 0], CHROMA_BAND)


def _peak_excess(channel: np.ndarray, band: tuple[float, float]) -> float:
    size = min(channel.shape[:2])
    if size < 32:
        return 0.0
    square = channel[:size, :size] - float(channel[:size, :size].mean())
    window = np.outer(np.hanning(size), np.hanning(size)).astype(np.float32)
    spectrum = np.fft.fftshift(np.abs(np.fft.fft2(square * window)))
    log_amp = np.log10(spectrum + 1e-3)
    rings, in_band = _rings(size, band)
    counts = np.bincount(rings.ravel(), minlength=size // 2 + 2)
    ring_mean = np.bincount(rings.ravel(), weights=log_amp.ravel(), minlength=size // 2 + 2) / np.maximum(counts, 1)
    excess = log_amp - ring_mean[rings]
    return float(excess[in_band].max()) if in_band.any() else 0.0


@functools.lru_cache(maxsize=32)
def _rings(size: int, band: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Ring index (radial frequency in bins) of every bin of a centred size x size spectrum, and the band mask."""
    coords = np.fft.fftshift(np.fft.fftfreq(size))
    radius = np.hypot(coords[None, :], coords[:, None])
    rings = np.minimum((radius * size).astype(int), size // 2 + 1)
    in_band = (radius >= band[0]) & (radius <= band[1])
    return rings, in_band


# ---- the verdict ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LivenessVerdict:
    decision: LivenessDecision
    reason: str  # in words, for the screen and the log
    cues: dict[str, float] = field(default_factory=dict)
    fired: tuple[str, ...] = ()  # the cues that call it an attack
    frames: int = 0
    blocking: bool = False  # personal memory must stay hidden: an attack, or undecided with block_undecided

    @property
    def attack(self) -> bool:
        return self.decision == "attack"

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "reason": self.reason,
            "cues": dict(self.cues),
            "fired": list(self.fired),
            "frames": self.frames,
            "blocking": self.blocking,
        }


def judge(evidence: Sequence[FrameEvidence], tuning: PassiveTuning = PASSIVE) -> LivenessVerdict:
    """The passive verdict over a window of frames of one face (oldest first)."""
    frames = len(evidence)
    if frames < tuning.min_frames:
        return LivenessVerdict(
            "undecided",
            f"liveness not checked yet: {frames} of {tuning.min_frames} frames needed",
            frames=frames,
            blocking=tuning.block_undecided,
        )
    cues: dict[str, float] = {}
    fired: list[str] = []
    messages: list[str] = []

    frozen = frozen_score([e.small for e in evidence])
    cues["frozen_diff"] = frozen
    if frozen < tuning.frozen_max_diff:
        fired.append(FROZEN)
        messages.append(f"the face image does not change between frames (diff {frozen:.2f})")

    meshes = [e.mesh_xy for e in evidence if e.mesh_xy is not None]
    if len(meshes) >= tuning.min_frames:
        inter_ocular = float(np.median([e.inter_ocular for e in evidence]))
        residual, motion = nonrigid_motion(meshes, inter_ocular)
        cues["nonrigid_residual"], cues["motion"] = residual, motion
        if motion >= tuning.rigid_min_motion and residual < tuning.rigid_max_residual:
            fired.append(RIGID)
            messages.append(
                f"the face moved like a flat picture (shape change {residual:.3f} < {tuning.rigid_max_residual:.3f} "
                f"for motion {motion:.2f} eye distances)"
            )

    peak = float(np.median([e.spectral for e in evidence]))
    cues["spectral_peak"] = peak
    if peak > tuning.spectral_max_peak:
        fired.append(SPECTRAL)
        messages.append(f"a regular pattern like a screen or print shows in the face (peak {peak:.2f})")

    chroma = float(np.median([e.chroma for e in evidence]))
    cues["chroma_peak"] = chroma
    if chroma > tuning.chroma_max_peak:
        fired.append(MOIRE)
        messages.append(f"colour fringes like a filmed screen's pixel grid show in the face (peak {chroma:.2f})")

    if fired:
        return LivenessVerdict(
            "attack", "presentation attack suspected: " + "; ".join(messages), cues, tuple(fired), frames, True
        )
    return LivenessVerdict("live", "liveness ok", cues, (), frames)


class PassiveLiveness:
    """Keeps the evidence of the last `window_s` seconds of one face and judges it on demand (thread-safe)."""

    def __init__(self, tuning: PassiveTuning = PASSIVE, history: int = 64) -> None:
        self.tuning = tuning
        self._evidence: deque[FrameEvidence] = deque(maxlen=history)
        self._lock = threading.Lock()

    def add(self, evidence: FrameEvidence) -> None:
        with self._lock:
            self._evidence.append(evidence)

    def clear(self) -> None:
        with self._lock:
            self._evidence.clear()

    def verdict(self, now: float) -> LivenessVerdict:
        with self._lock:
            window = [e for e in self._evidence if now - self.tuning.window_s <= e.timestamp <= now]
        return judge(window, self.tuning)
