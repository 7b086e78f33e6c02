"""Shared fixtures: real models load once per session; data-dependent tests skip with a reason."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from kiosk.config import KioskConfig, load_config
from kiosk.models import ModelStore


@pytest.fixture(scope="session")
def base_config() -> KioskConfig:
    """The environment's config (shared model cache), ignoring any user config file."""
    return load_config(path=None, environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})


@pytest.fixture()
def config(base_config: KioskConfig, tmp_path: Path) -> KioskConfig:
    """A config whose DB, logs and calibration outputs live in tmp_path; models stay shared."""
    cfg = base_config.model_copy(deep=True)
    cfg.paths.models_dir = base_config.paths.models
    cfg.paths.data_dir = tmp_path / "home"
    cfg.paths.data_dir.mkdir()
    return cfg


@pytest.fixture(scope="session")
def model_store(base_config: KioskConfig) -> ModelStore:
    return ModelStore(base_config.paths.models)


@pytest.fixture(scope="session")
def data_dir(base_config: KioskConfig) -> Path:
    path = base_config.paths.eval_data_dir
    if not path.is_dir():
        pytest.skip(f"evaluation data not found at {path} (set KIOSK_DATA to ../shared/data)")
    return path


@pytest.fixture(scope="session")
def text_encoder(base_config: KioskConfig) -> Iterator[object]:
    from kiosk.text import load_text_encoder

    yield load_text_encoder(base_config)
