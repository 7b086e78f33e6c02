from pathlib import Path

import numpy as np
import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ModelError
from kiosk.text import TextEncoder, load_text_encoder
from kiosk.text.encoder import DIMENSION

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.npz"


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = np.load(FIXTURE)
    return [str(s) for s in data["sentences"]], data["embeddings"]


@pytest.mark.real_models
@pytest.mark.parametrize("backend", ["openvino", "onnxruntime"])
def test_parity_with_sentence_transformers(
    base_config: KioskConfig, backend: str, reference: tuple[list[str], np.ndarray]
) -> None:
    sentences, expected = reference
    assert len(sentences) >= 20
    encoder = load_text_encoder(base_config, backend=backend)  # type: ignore[arg-type]
    actual = encoder.encode(sentences)
    cosines = np.sum(actual * expected, axis=1)
    assert cosines.min() >= 0.999, dict(zip(sentences, cosines.round(4), strict=True))


@pytest.mark.real_models
def test_batching_and_order_do_not_change_vectors(text_encoder: TextEncoder) -> None:
    sentences = ["short", "a somewhat longer sentence about gardens", "mid length text here"]
    together = text_encoder.encode(sentences)
    one_by_one = np.stack([text_encoder.encode_one(s) for s in sentences])
    assert together.shape == (3, DIMENSION)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(together * one_by_one, axis=1)) > 0.9999


@pytest.mark.real_models
def test_semantics_rank_paraphrase_above_unrelated(text_encoder: TextEncoder) -> None:
    a, b, c = text_encoder.encode(["I adopted a dog.", "I got a new puppy.", "Interest rates went up."])
    assert a @ b > a @ c + 0.2


@pytest.mark.real_models
def test_empty_batch_and_bare_string(text_encoder: TextEncoder) -> None:
    assert text_encoder.encode([]).shape == (0, DIMENSION)
    with pytest.raises(TypeError):
        text_encoder.encode("not a list")  # type: ignore[arg-type]


def test_unreadable_tokenizer_is_a_model_error(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(ModelError, match="tokenizer"):
        TextEncoder(encoder=None, tokenizer_path=bad)  # type: ignore[arg-type]


@pytest.mark.real_models
def test_int8_weights_stay_close_but_fp32_is_the_parity_path(
    base_config: KioskConfig, reference: tuple[list[str], np.ndarray]
) -> None:
    sentences, expected = reference
    int8 = load_text_encoder(base_config, backend="onnxruntime", weights="int8")
    cosines = np.sum(int8.encode(sentences) * expected, axis=1)
    assert cosines.min() >= 0.995
    assert cosines.min() < 0.9999  # quantisation is visible: the fp32 swap is what buys parity


def test_fp32_rebuild_rejects_weights_from_another_model(tmp_path: Path) -> None:
    from kiosk.text.fp32 import _best_original

    quantised = np.ones((4, 3), dtype=np.float32)
    with pytest.raises(ModelError, match="no fp32 weight"):
        _best_original(quantised, {"other": np.ones((5, 5), dtype=np.float32)})
