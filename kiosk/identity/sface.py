"""SFace (OpenCV Zoo face_recognition_sface_2021dec): 112x112 five-point-aligned RGB in, 128-d out.

The model takes RGB pixel values as they are (0-255, no standardisation), as OpenCV's FaceRecognizerSF
feeds it. Its graph is fixed at batch 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kiosk.config import KioskConfig
from kiosk.identity.align import align_five_point, pad_precropped
from kiosk.models import ModelStore
from kiosk.runtime import Encoder, load_encoder, unit_embeddings

SOURCE = "sface-2021dec"
INPUT, OUTPUT = "data", "fc1"
INPUT_SIZE = 112
# A pre-cropped face has no detection to align it by. Its five landmarks sit at fixed fractions of the
# crop: the median MTCNN landmarks over the 7,701 LFW3D crops of the LFW pairs (x, y as fractions of
# width and height; spread about 0.03). Detecting on each crop instead found no face in 7 % of them and
# gave the same LFW3D accuracy in a one-off comparison (0.957 against 0.956 with these fixed points).
PRECROPPED_LANDMARKS = np.array(
    [[0.260, 0.371], [0.737, 0.361], [0.498, 0.672], [0.295, 0.924], [0.717, 0.918]], dtype=np.float32
)
# Context added around a pre-cropped face (by reflection) so that the warp never samples off the crop.
PRECROPPED_CONTEXT = 0.6


def precropped_landmarks(height: int, width: int, context: float = PRECROPPED_CONTEXT) -> np.ndarray:
    """The landmarks of a `height` x `width` pre-cropped face inside its reflected context."""
    pad_y, pad_x = round(height * context / 2), round(width * context / 2)
    return PRECROPPED_LANDMARKS * np.array([width, height], dtype=np.float32) + np.array([pad_x, pad_y], np.float32)


def align_precropped(rgb: np.ndarray, size: int = INPUT_SIZE) -> np.ndarray:
    height, width = rgb.shape[:2]
    padded = pad_precropped(rgb, PRECROPPED_CONTEXT, PRECROPPED_CONTEXT)
    return align_five_point(padded, precropped_landmarks(height, width), size)


class SFaceEmbedder:
    name = "sface-2021dec"
    dimension = 128
    input_size = INPUT_SIZE

    def __init__(self, encoder: Encoder, model_sha256: str) -> None:
        self._encoder = encoder
        self.model_sha256 = model_sha256

    def crop(self, rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        return align_five_point(rgb, landmarks, INPUT_SIZE)

    def crop_precropped(self, rgb: np.ndarray) -> np.ndarray:
        return align_precropped(rgb, INPUT_SIZE)

    def embed_crops(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """(n, 128) L2-normalised embeddings of 112x112 RGB uint8 crops."""
        feeds = [np.ascontiguousarray(crop.astype(np.float32).transpose(2, 0, 1)[None]) for crop in crops]
        return unit_embeddings(self._encoder, feeds, INPUT, OUTPUT, self.dimension)


def load_sface(config: KioskConfig, store: ModelStore | None = None) -> SFaceEmbedder:
    store = store or ModelStore(config.paths.models)
    encoder = load_encoder(
        store.ensure(SOURCE),
        backend=config.runtime.backend,
        threads=config.runtime.threads,
    )
    return SFaceEmbedder(encoder, store.manifest.get(SOURCE).sha256)
