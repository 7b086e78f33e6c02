"""Build the configured LLM backend."""

from __future__ import annotations

import os

from kiosk.config import KioskConfig
from kiosk.errors import ConfigError
from kiosk.llm.backend import LLM
from kiosk.models import ModelStore


def create_llm(config: KioskConfig, models: ModelStore | None = None) -> LLM:
    settings = config.llm
    if settings.backend == "openai":
        from kiosk.llm.openai_compat import OpenAICompatLLM

        if not settings.endpoint_url:
            raise ConfigError("llm.backend is 'openai' but llm.endpoint_url is not set", "set the server's base URL")
        return OpenAICompatLLM(settings.endpoint_url, settings.endpoint_model, os.environ.get(settings.api_key_env))
    from kiosk.llm.llamacpp import LlamaCppLLM
    from kiosk.llm.requant import runtime_model

    path, _ = runtime_model(settings, models or ModelStore(config.paths.models))
    return LlamaCppLLM(
        path,
        n_ctx=settings.n_ctx,
        threads=settings.threads,
        flash_attn=settings.flash_attn,
        reuse_system_prompt=settings.reuse_system_prompt,
        cache_reuse_min_tokens=settings.cache_reuse_min_tokens,
    )
