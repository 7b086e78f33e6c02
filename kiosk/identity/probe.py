"""The probe: one fused biometric embedding handed from capture to the memory gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from kiosk.identity.liveness import LivenessVerdict

Modality = Literal["face", "palm"]


@dataclass(frozen=True)
class Probe:
    modality: Modality
    vector: np.ndarray  # float32, L2-normalised, 512 (FaceNet) / encoder dim
    model_sha256: str  # sha256 of the encoder model that produced it
    captured_at: float  # time.time() of the newest fused frame
    frames: int = 1  # frames fused
    faces_in_view: int = 1  # >1 => "two people in view": the app hides personal memory
    liveness: LivenessVerdict | None = None  # passive presentation-attack verdict over the probe's frames
    # (V, D) unit vectors of the probe ROI's re-alignments (palm.alignment_search): the gate scores a template as
    # the best cosine over `vector` and these. None: the vector alone.
    variants: np.ndarray | None = None

    @property
    def liveness_blocks(self) -> bool:
        """True when the liveness verdict says personal memory must stay hidden (an attack is suspected)."""
        return self.liveness is not None and self.liveness.blocking
