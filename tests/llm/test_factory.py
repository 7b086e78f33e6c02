"""The LLM backend registry (kiosk.llm.factory): looked up by llm.backend, each backend with its settings model."""

from __future__ import annotations

from typing import get_args

import pytest

from kiosk.config import KioskConfig, LLMConfig, OpenAISettings
from kiosk.errors import ConfigError
from kiosk.llm.factory import LLM_BACKENDS
from kiosk.plugins import NoSettings


def test_the_setting_offers_exactly_the_registered_backends() -> None:
    assert set(get_args(LLMConfig.model_fields["backend"].annotation)) == set(LLM_BACKENDS.names())


def test_each_backend_carries_its_own_settings_model() -> None:
    assert LLM_BACKENDS.get("openai").settings is OpenAISettings
    assert LLM_BACKENDS.get("llamacpp").settings is NoSettings
    assert LLMConfig.model_fields["openai"].annotation is OpenAISettings


def test_an_unknown_backend_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"llm\.backend") as raised:
        LLM_BACKENDS.get("ollama")
    assert raised.value.hint == "use one of: llamacpp, openai"


def test_the_openai_backend_needs_its_endpoint(base_config: KioskConfig) -> None:
    config = base_config.model_copy(deep=True)
    config.llm.backend = "openai"
    with pytest.raises(ConfigError, match=r"llm\.openai\.endpoint_url"):
        LLM_BACKENDS.create("openai", config)
