"""The palm embedder: image -> palm ROI -> fixed-length L2-normalised vector, compared by cosine.

The encoder behind it is the one `palm.encoder` names (kiosk.identity.palm_encoders). Probes also carry the
vectors of the ROI's re-alignments when `palm.alignment_search` is on (kiosk.identity.palm_alignment);
templates stay one vector per image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from kiosk.config import KioskConfig
from kiosk.identity.palm_alignment import SHIPPED_SEARCH, AlignedVectors, AlignmentSearch, realigned_rois
from kiosk.identity.palm_encoders import PALM_ENCODERS, RoiEncoder
from kiosk.identity.palm_roi import PalmRoi, PalmRoiExtractor, prepare_roi
from kiosk.models import ModelStore
from kiosk.runtime import Backend

BATCH = 32


class PalmEmbedder:
    """Palm embeddings under the interface shared with the face embedder (see CONTRACTS.md)."""

    modality: Literal["palm"] = "palm"

    def __init__(self, encoder: RoiEncoder, config: KioskConfig, store: ModelStore | None = None) -> None:
        self.encoder = encoder
        self.config = config
        self.name = encoder.name
        self.model_sha256 = encoder.model_sha256
        self.dimension = encoder.dimension
        self._store = store
        self._extractor: PalmRoiExtractor | None = None
        self.alignment: AlignmentSearch | None = SHIPPED_SEARCH if config.palm.alignment_search else None

    @property
    def extractor(self) -> PalmRoiExtractor:
        """The hand landmarker, loaded on first use of a full-hand image (ROI-only users never load it)."""
        if self._extractor is None:
            store = self._store or ModelStore(self.config.paths.models)
            self._extractor = PalmRoiExtractor(store.ensure("hand-landmarker"))
        return self._extractor

    def extract_roi(self, image: np.ndarray) -> PalmRoi:
        """Full hand image -> the normalised palm ROI, or ProbeError with the reason."""
        return self.extractor.extract(image)

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        """Full hand image (BGR or gray) -> vector; ProbeError when no usable open palm is in view."""
        return self.encode_rois([self.extract_roi(image).roi])[0]

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return self.encode_rois([self.extract_roi(image).roi for image in images])

    def embed_roi(self, image: np.ndarray) -> np.ndarray:
        """A pre-cropped palm ROI (ROI scanner, benchmark set) -> vector; no hand detection."""
        return self.embed_rois([image])[0]

    def embed_rois(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return self.encode_rois([prepare_roi(image).roi for image in images])

    def encode_rois(self, rois: Sequence[np.ndarray]) -> np.ndarray:
        """Already normalised ROIs (output of extract_roi/prepare_roi) -> (n, D) float32 unit vectors."""
        if not rois:
            return np.empty((0, self.dimension), dtype=np.float32)
        stacked = np.stack(rois)
        return np.concatenate([self.encoder.encode(stacked[i : i + BATCH]) for i in range(0, len(stacked), BATCH)])

    def probe_vectors(self, image: np.ndarray, *, roi: bool = False) -> AlignedVectors:
        """A probe image (full hand, or a pre-cropped ROI with `roi`) -> its vector and, with the search on, its
        re-alignments' vectors; ProbeError when no usable palm is in view."""
        normalised = prepare_roi(image).roi if roi else self.extract_roi(image).roi
        return self.encode_probe_roi(normalised)

    def encode_probe_roi(self, roi: np.ndarray) -> AlignedVectors:
        """A normalised ROI as a probe: one vector, plus the variants when `palm.alignment_search` is on."""
        if self.alignment is None:
            return AlignedVectors(self.encode_rois([roi])[0])
        vectors = self.encode_rois(list(realigned_rois(roi, self.alignment)))
        return AlignedVectors(vectors[0], vectors[1:])  # row 0 is the unchanged ROI

    def close(self) -> None:
        if self._extractor is not None:
            self._extractor.close()
            self._extractor = None


def load_palm_embedder(
    config: KioskConfig, store: ModelStore | None = None, backend: Backend | None = None
) -> PalmEmbedder:
    """The palm embedder on the encoder `palm.encoder` names, on the configured runtime."""
    encoder = PALM_ENCODERS.create(config.palm.encoder, config, backend or config.runtime.backend)
    return PalmEmbedder(encoder, config, store)
