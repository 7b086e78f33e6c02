"""The probe: one fused biometric embedding handed from capture to the memory gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Modality = Literal["face", "palm"]


@dataclass(frozen=True)
class Probe:
    modality: Modality
    vector: np.ndarray  # float32, L2-normalised, 512 (FaceNet) / encoder dim
    model_sha256: str  # sha256 of the encoder model that produced it
    captured_at: float  # time.time() of the newest fused frame
    frames: int = 1  # frames fused
    faces_in_view: int = 1  # >1 => "two people in view": the app hides personal memory
