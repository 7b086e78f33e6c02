"""all-MiniLM-L6-v2 through the encoder runtime: WordPiece, mean pooling over the mask, L2 norm."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from tokenizers import Tokenizer

from kiosk.config import KioskConfig
from kiosk.errors import ModelError
from kiosk.models import ModelStore
from kiosk.runtime import Backend, Encoder, load_encoder
from kiosk.text.fp32 import CONVERSION_VERSION, build_fp32_minilm

DIMENSION = 384
Weights = Literal["fp32", "int8"]
# fp32 swaps the original weights into the int8 graph at preparation (parity with sentence-transformers, cosine
# >= 0.9999); int8 runs the quantised graph as shipped (up to 0.002 off).
WEIGHTS: Weights = "fp32"
FP32_WEIGHTS = "minilm-l6-safetensors"  # manifest name of the fp32 safetensors weights
TOKENIZER = "minilm-l6-tokenizer"  # manifest name of the tokenizer.json
MAX_TOKENS = 256  # truncation length in word pieces
BATCH_SIZE = 32  # sentences per inference batch


class TextEncoder:
    """Encodes sentences into L2-normalised 384-d float32 vectors."""

    dimension = DIMENSION

    def __init__(
        self, encoder: Encoder, tokenizer_path: Path, max_tokens: int = MAX_TOKENS, batch_size: int = BATCH_SIZE
    ):
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:  # tokenizers raises a plain Exception on a bad file
            raise ModelError(f"tokenizer {tokenizer_path} cannot be read ({exc})", "run `kiosk models pull`") from exc
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()
        self._encoder = encoder
        self.batch_size = batch_size
        self.backend = encoder.backend

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        if isinstance(sentences, str):
            raise TypeError("encode() takes a sequence of strings; wrap a single sentence in a list")
        if not sentences:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        # Sorting by length keeps padding (and wasted compute) small within each batch.
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        out = np.zeros((len(sentences), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch_ids = order[start : start + self.batch_size]
            out[batch_ids] = self._encode_batch([sentences[i] for i in batch_ids])
        return out

    def encode_one(self, sentence: str) -> np.ndarray:
        return self.encode([sentence])[0]

    def _encode_batch(self, sentences: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(sentences)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        tokens = self._encoder.run({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[
            self._encoder.output_names[0]
        ].astype(np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def text_settings(config: KioskConfig) -> dict[str, Any]:
    """Everything that decides the vectors: the configured graph and this module's constants."""
    return {
        "model": config.text.model,
        "weights": WEIGHTS,
        "fp32_weights": FP32_WEIGHTS,
        "tokenizer": TOKENIZER,
        "max_tokens": MAX_TOKENS,
        "batch_size": BATCH_SIZE,
    }


def text_model_path(config: KioskConfig, models: ModelStore, weights: Weights = WEIGHTS) -> Path:
    """The ONNX file of `text.model` with `weights`, converting to fp32 once if needed."""
    graph = config.text.model
    if weights == "int8":
        return models.ensure(graph)
    weights_name = FP32_WEIGHTS
    weights_path = models.ensure(weights_name)
    version = f"{CONVERSION_VERSION}-{models.manifest.get(weights_name).sha256[:12]}"

    def build(int8_graph: Path, out_dir: Path) -> None:
        build_fp32_minilm(int8_graph, weights_path, out_dir)

    return models.derived("minilm-l6-fp32", graph, version, build) / "all-MiniLM-L6-v2-fp32.onnx"


def load_text_encoder(config: KioskConfig, backend: Backend | None = None, weights: Weights = WEIGHTS) -> TextEncoder:
    models = ModelStore(config.paths.models)
    encoder = load_encoder(
        text_model_path(config, models, weights),
        backend=backend or config.runtime.backend,
        threads=config.runtime.threads,
    )
    return TextEncoder(encoder, models.ensure(TOKENIZER))
