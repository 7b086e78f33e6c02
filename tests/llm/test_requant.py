"""Which GGUF the llama.cpp backend runs: the manifest model, a deployer's file, or on an AMX build the model
requantised to Q8_0 (made once, real llama.cpp quantisation on the small SmolLM2 model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.config import KioskConfig
from kiosk.llm import requant
from kiosk.llm.llamacpp import LlamaCppLLM
from kiosk.llm.requant import build_has_amx, requantized_model, runtime_model
from kiosk.models import ModelStore
from kiosk.models.store import sha256_file

AVX512 = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
AMX = AVX512.replace("LLAMAFILE", "AMX_INT8 = 1 | LLAMAFILE")
SMALL = "smollm2-135m-instruct"


def test_only_a_build_with_the_amx_kernels_counts_as_amx() -> None:
    assert build_has_amx(AMX)
    assert not build_has_amx(AVX512)
    assert not build_has_amx(AMX.replace("AMX_INT8 = 1", "AMX_INT8 = 0"))


def test_a_deployers_file_is_run_as_given_whatever_the_build(tmp_path: Path, base_config: KioskConfig) -> None:
    settings = base_config.llm.model_copy(update={"gguf_path": tmp_path / "mine.gguf"})
    store = ModelStore(tmp_path / "models")
    assert runtime_model(settings, store) == (tmp_path / "mine.gguf", "")


@pytest.mark.real_models
def test_only_a_model_whose_entry_names_an_amx_type_is_requantised_and_only_on_amx(
    monkeypatch: pytest.MonkeyPatch, base_config: KioskConfig, model_store: ModelStore
) -> None:
    default = base_config.llm.model
    assert model_store.manifest.get(default).amx_type == "q8_0" and model_store.manifest.get(SMALL).amx_type is None
    monkeypatch.setattr(requant, "build_has_amx", lambda: False)
    shipped = (model_store.ensure(default), model_store.manifest.get(default).sha256)
    assert runtime_model(base_config.llm, model_store) == shipped
    monkeypatch.setattr(requant, "build_has_amx", lambda: True)
    assert runtime_model(base_config.llm, model_store, amx_requantize=False) == shipped
    small = base_config.llm.model_copy(update={"model": SMALL})
    assert runtime_model(small, model_store) == (model_store.ensure(SMALL), model_store.manifest.get(SMALL).sha256)
    path, sha = runtime_model(base_config.llm, model_store)
    assert path.name == "qwen2.5-coder-0.5b-instruct-q4_k_m.q8_0.gguf" and path.parent.parent.name == "derived"
    assert sha != shipped[1] and len(sha) == 64


@pytest.mark.real_models
@pytest.mark.llm
def test_a_requantised_model_is_made_once_and_answers(tmp_path: Path, model_store: ModelStore) -> None:
    """The derived file is a real llama.cpp Q8_0 GGUF of the same model (it loads and answers), its sha256 is the
    one reported, and a second call reuses it instead of quantising again."""
    store = ModelStore(tmp_path / "models")
    source = model_store.ensure(SMALL)
    store.path(SMALL).parent.mkdir(parents=True, exist_ok=True)
    store.path(SMALL).symlink_to(source)
    path, sha = requantized_model(store, SMALL, "q8_0")
    assert path.name == f"{source.stem}.q8_0.gguf" and sha == sha256_file(path) != store.manifest.get(SMALL).sha256
    assert path.stat().st_size > source.stat().st_size  # 8 bits a weight instead of ~4.5
    made = path.stat().st_mtime_ns
    assert requantized_model(store, SMALL, "q8_0") == (path, sha) and path.stat().st_mtime_ns == made
    llm = LlamaCppLLM(path, n_ctx=512, threads=1)
    reply = llm.chat([{"role": "user", "content": "What is the capital of France? One word."}], max_tokens=8)
    assert "paris" in reply.lower()


@pytest.mark.real_models
@pytest.mark.llm
def test_the_llm_still_answers_after_the_text_encoder_ran_on_its_thread(
    model_store: ModelStore, text_encoder: object
) -> None:
    """ONNX Runtime's int8 kernels release AMX's tile configuration on the thread they run on; llama.cpp's AMX
    kernels used to load it once per thread and then died of SIGILL (packaging/patch_llama_amx.py). The kiosk
    embeds every question before the answer, on the same thread."""
    llm = LlamaCppLLM(model_store.ensure(SMALL), n_ctx=512, threads=1)
    question = [{"role": "user", "content": "What is the capital of France? One word."}]
    assert "paris" in llm.chat(question, max_tokens=8).lower()
    text_encoder.encode(["what is the capital of France?"] * 4)  # type: ignore[attr-defined]
    # a prompt sharing no prefix with the first, so llama.cpp multiplies whole matrices again (one token would not)
    other = "In one word, name the capital city of the United Kingdom."
    assert "london" in llm.chat([{"role": "user", "content": other}], max_tokens=16).lower()
