"""Palm scanner frames -> one palm Probe, as the face camera gives face probes.

The scanner is any frame source (`capture.palm_source`): a UVC camera (often near-infrared gray), a folder
a vendor SDK writes images to, or a video file. Full-hand frames go through landmarks and the palm ROI;
an ROI scanner (`palm.roi_input`) delivers the ROI itself. Frames the quality gates refuse are skipped;
the last refusal is the reason given when no usable palm arrives in time. With `palm.alignment_search` on,
each frame also gives its ROI's re-aligned vectors and the probe carries them fused (kiosk.identity.palm_alignment).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.palm import PalmEmbedder
from kiosk.identity.palm_alignment import AlignedVectors, fuse_aligned
from kiosk.identity.probe import Probe
from kiosk.identity.sources import FrameSource, SourceState, configured_source
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S


class PalmCapture:
    def __init__(
        self,
        embedder: PalmEmbedder,
        source: FrameSource,
        *,
        roi_input: bool = False,
        fuse_frames: int = FUSE_FRAMES["palm"],
        max_age_s: float = FUSE_MAX_AGE_S["palm"],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.embedder = embedder
        self.source = source
        self.roi_input = roi_input
        self.fuse_frames = fuse_frames
        self.max_age_s = max_age_s
        self._clock = clock

    def embed_frame(self, image: np.ndarray) -> np.ndarray:
        return self.embedder.embed_roi(image) if self.roi_input else self.embedder.embed_image(image)

    def probe_frame(self, image: np.ndarray) -> AlignedVectors:
        """One frame as probe vectors: with `palm.alignment_search` on, its re-alignments too."""
        return self.embedder.probe_vectors(image, roi=self.roi_input)

    def probe(self, timeout_s: float = 5.0) -> Probe:
        """Average up to `fuse_frames` good, recent frames into a probe; ProbeError with the reason if none."""
        deadline = time.monotonic() + timeout_s
        good: list[tuple[float, AlignedVectors]] = []
        last_index, reason = -1, "no frame arrived from the palm scanner"
        while time.monotonic() < deadline and len(good) < self.fuse_frames:
            frame = self.source.wait_for_frame(last_index, timeout=min(0.5, max(0.01, deadline - time.monotonic())))
            if frame is None:
                if self.source.state in (SourceState.ENDED, SourceState.FAILED):
                    reason = f"the palm scanner stopped: {self.source.message}"
                    break
                continue
            last_index = frame.index
            try:
                good.append((frame.timestamp, self.probe_frame(frame.image)))
            except ProbeError as exc:
                reason = exc.message
        now = self._clock()
        recent = [(stamp, vector) for stamp, vector in good if now - stamp <= self.max_age_s]
        if not recent:
            raise ProbeError(f"no usable palm: {reason}", "hold the open palm still over the scanner")
        fused = fuse_aligned([vectors for _, vectors in recent])
        return Probe(
            modality="palm",
            vector=fused.vector,
            model_sha256=self.embedder.model_sha256,
            captured_at=max(stamp for stamp, _ in recent),
            frames=len(recent),
            variants=fused.variants,
        )


def open_palm_capture(config: KioskConfig, embedder: PalmEmbedder) -> PalmCapture | None:
    """The configured scanner (unstarted source inside); None when the terminal has no palm scanner."""
    source = configured_source(config.capture, "palm")
    if source is None:
        return None
    return PalmCapture(embedder, source, roi_input=config.palm.roi_input)
