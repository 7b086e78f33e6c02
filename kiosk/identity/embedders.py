"""Face embedding models found by name: the registry behind `face.embedder` (kiosk.plugins).

Each plugin builds a `CropEmbedder`: the model plus the crop it was trained on. Each needs its own calibration
(gate.face_calibration), since their scores are not comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kiosk.config import ArcFaceSettings
from kiosk.models import ModelStore
from kiosk.plugins import Registry

if TYPE_CHECKING:
    from kiosk.config import KioskConfig


class CropEmbedder(Protocol):
    """An embedding model plus the crop it was trained on (FaceNet margin crop, ArcFace 5-point).

    A crop's second-to-last axis is its width: mirroring that axis mirrors the face (flip augmentation).
    """

    name: str
    model_sha256: str
    dimension: int
    input_size: int

    def crop(self, rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray: ...

    def crop_precropped(self, rgb: np.ndarray) -> np.ndarray: ...

    def embed_crops(self, crops: Sequence[np.ndarray]) -> np.ndarray: ...


FACE_EMBEDDERS: Registry[CropEmbedder] = Registry("face embedder", "face.embedder")


@FACE_EMBEDDERS.register("facenet+sface", summary="FaceNet and SFace, each L2-normalised, fused into one template.")
def fused_embedder(config: KioskConfig, store: ModelStore) -> CropEmbedder:
    from kiosk.identity.fused import load_fused

    return load_fused(config, store)


@FACE_EMBEDDERS.register("facenet", summary="FaceNet 20180408 (Inception-ResNet-v1, VGGFace2) as an OpenVINO IR.")
def facenet_embedder(config: KioskConfig, store: ModelStore) -> CropEmbedder:
    from kiosk.identity.facenet import load_facenet

    return load_facenet(config, store)


@FACE_EMBEDDERS.register("sface", summary="SFace (OpenCV Zoo 2021dec), 112x112 five-point-aligned.")
def sface_embedder(config: KioskConfig, store: ModelStore) -> CropEmbedder:
    from kiosk.identity.sface import load_sface

    return load_sface(config, store)


@FACE_EMBEDDERS.register(
    "arcface-onnx", settings=ArcFaceSettings, summary="A deployer's ArcFace-style ONNX (face.arcface.model_path)."
)
def arcface_embedder(config: KioskConfig, store: ModelStore) -> CropEmbedder:
    from kiosk.identity.arcface import load_arcface

    return load_arcface(config)


def load_crop_embedder(config: KioskConfig, store: ModelStore | None = None) -> CropEmbedder:
    """The model `face.embedder` names."""
    return FACE_EMBEDDERS.create(config.face.embedder, config, store or ModelStore(config.paths.models))
