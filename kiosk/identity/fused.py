"""Two face models as one template: FaceNet and SFace, each L2-normalised, weighted and concatenated.

The cosine of two such templates is the weighted mean of the two models' cosines (score-level fusion),
so the gate, the stores and the calibration treat it as one 640-d encoder. The two models were
trained apart (different architectures and losses) and err on different LFW pairs: fused, the LFW3D
EER is 0.039 against 0.050 and 0.047 alone (bench/results/face_models.md).

A crop is both models' crops stacked: (2, 160, 160, 3), FaceNet's margin crop first, then the
five-point alignment at 160 px (resized to 112 for SFace). Mirroring the width axis mirrors both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import cv2
import numpy as np

from kiosk.config import KioskConfig
from kiosk.identity.align import align_five_point
from kiosk.identity.facenet import FaceNetEmbedder, load_facenet
from kiosk.identity.sface import SFaceEmbedder, align_precropped, load_sface
from kiosk.models import ModelStore

FUSION_VERSION = "1"
# FaceNet's share of the fused cosine (SFace gets the rest): equal, never tuned.
FACENET_WEIGHT = 0.5


class FusedFaceEmbedder:
    def __init__(self, facenet: FaceNetEmbedder, sface: SFaceEmbedder, facenet_weight: float = FACENET_WEIGHT) -> None:
        if not 0 < facenet_weight < 1:
            raise ValueError("facenet_weight must be between 0 and 1")
        self._facenet = facenet
        self._sface = sface
        self._weights = (float(np.sqrt(facenet_weight)), float(np.sqrt(1 - facenet_weight)))
        self.name = f"{facenet.name}+{sface.name}"
        self.dimension = facenet.dimension + sface.dimension
        self.input_size = facenet.input_size
        identity = f"fusion {FUSION_VERSION}: {facenet.model_sha256} {sface.model_sha256} weight {facenet_weight}"
        self.model_sha256 = hashlib.sha256(identity.encode()).hexdigest()

    def crop(self, rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        return np.stack([self._facenet.crop(rgb, landmarks), align_five_point(rgb, landmarks, self.input_size)])

    def crop_precropped(self, rgb: np.ndarray) -> np.ndarray:
        return np.stack([self._facenet.crop_precropped(rgb), align_precropped(rgb, self.input_size)])

    def embed_crops(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        if not crops:
            return np.empty((0, self.dimension), dtype=np.float32)
        size = self._sface.input_size
        first = self._facenet.embed_crops([crop[0] for crop in crops])
        second = self._sface.embed_crops(
            [cv2.resize(crop[1], (size, size), interpolation=cv2.INTER_AREA) for crop in crops]
        )
        joined = np.hstack([self._weights[0] * first, self._weights[1] * second])
        return (joined / np.linalg.norm(joined, axis=1, keepdims=True)).astype(np.float32)


def load_fused(config: KioskConfig, store: ModelStore | None = None) -> FusedFaceEmbedder:
    store = store or ModelStore(config.paths.models)
    return FusedFaceEmbedder(load_facenet(config, store), load_sface(config, store))
