"""A pixel embedder so the calibration pipeline runs without models."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from kiosk.errors import ProbeError

FAKE_SHA = "a" * 64


class PixelEmbedder:
    """Mean-removed grey pixels as the embedding: same-identity images (base + noise) score high."""

    dimension = 24 * 24

    def __init__(self, modality: str = "face", model_sha256: str = FAKE_SHA) -> None:
        self.modality = modality
        self.model_sha256 = model_sha256
        self.calls = 0

    def embed_crop(self, img: np.ndarray) -> np.ndarray:
        self.calls += 1
        grey = cv2.resize(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), (24, 24)).astype(np.float32).ravel()
        grey -= grey.mean()
        norm = float(np.linalg.norm(grey))
        if norm < 1e-3:
            raise ProbeError("blank image: nothing to embed")
        return grey / norm

    def embed_image(self, img: np.ndarray) -> np.ndarray:
        return self.embed_crop(img)


MakeFolder = Callable[..., Path]
