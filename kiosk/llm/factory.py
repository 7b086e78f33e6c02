"""Build the configured LLM backend: a registry of backends keyed by `llm.backend` (kiosk.plugins)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kiosk.config import OpenAISettings
from kiosk.errors import ConfigError
from kiosk.llm.backend import LLM
from kiosk.plugins import Registry

if TYPE_CHECKING:
    from kiosk.config import KioskConfig
    from kiosk.models import ModelStore

LLM_BACKENDS: Registry[LLM] = Registry("LLM backend", "llm.backend")

N_CTX = 4096  # context window in tokens: the answering prompt with its worked examples and K notes fits well inside
# Flash attention: first token 0.89x with the 0.5B model on 2 threads; its other rounding changed no owner F1
# measurably (bench/results/latency_50_flash.md, flash_attn_f1.md).
FLASH_ATTN = True


@LLM_BACKENDS.register("llamacpp", summary="llama-cpp-python in-process on a GGUF file (llm.model or llm.gguf_path).")
def llamacpp_backend(config: KioskConfig, models: ModelStore | None = None) -> LLM:
    from kiosk.llm.llamacpp import LlamaCppLLM
    from kiosk.llm.requant import runtime_model
    from kiosk.models import ModelStore

    path, _ = runtime_model(config.llm, models or ModelStore(config.paths.models))
    return LlamaCppLLM(path, n_ctx=N_CTX, threads=config.llm.threads, flash_attn=FLASH_ATTN)


@LLM_BACKENDS.register("openai", settings=OpenAISettings, summary="An OpenAI-compatible chat server (llm.openai).")
def openai_backend(config: KioskConfig, models: ModelStore | None = None) -> LLM:
    from kiosk.llm.openai_compat import OpenAICompatLLM

    settings = config.llm.openai
    if not settings.endpoint_url:
        raise ConfigError("llm.backend is 'openai' but llm.openai.endpoint_url is not set", "set the server's base URL")
    return OpenAICompatLLM(settings.endpoint_url, settings.endpoint_model, os.environ.get(settings.api_key_env))


def create_llm(config: KioskConfig, models: ModelStore | None = None) -> LLM:
    """The backend `llm.backend` names, built from its settings (`models`: where llama.cpp's GGUF is found)."""
    return LLM_BACKENDS.create(config.llm.backend, config, models)
