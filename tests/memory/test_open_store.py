"""One config line picks the store: SQLite by default, another SQLite file, or the fleet store."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.config import KioskConfig, load_config
from kiosk.errors import ConfigError
from kiosk.memory import SqliteStore
from kiosk.memory.fleet_store import FleetStore
from kiosk.memory.open import STORES, describe_url, open_store, url_scheme


def test_default_is_the_sqlite_file_and_sqlite_urls_name_another(config: KioskConfig, tmp_path: Path) -> None:
    with open_store(config) as store:
        assert isinstance(store, SqliteStore) and store.path == config.paths.db
    config.store.url = f"sqlite:{tmp_path / 'other.db'}"
    with open_store(config) as store:
        assert isinstance(store, SqliteStore) and store.path == tmp_path / "other.db"


def test_a_postgresql_url_opens_the_fleet_store_with_its_queue(
    config: KioskConfig, pg_database: tuple[str, str]
) -> None:
    config.store.url = pg_database[1]
    with open_store(config) as store:
        assert isinstance(store, FleetStore) and store.queue.path == config.paths.data_dir / "fleet-queue.db"
        store.add_user("Ann")
        assert [u.name for u in store.list_users()] == ["Ann"]


def test_store_url_from_a_config_file_and_bad_urls(tmp_path: Path) -> None:
    path = tmp_path / "kiosk.toml"
    path.write_text('[store]\nurl = "postgresql://kiosk:pw@db.example:5432/fleet"\n')
    assert load_config(path, environ={}).store.url.startswith("postgresql://")
    path.write_text('[store]\nbackend = "postgres"\n')
    with pytest.raises(ConfigError, match=r"unknown setting 'store\.backend'"):
        load_config(path, environ={})
    cfg = load_config(None, environ={"KIOSK_STORE__URL": "mysql://x"})
    with pytest.raises(ConfigError, match="neither 'sqlite:PATH' nor"):
        open_store(cfg)
    assert describe_url("postgresql://kiosk:pw@db:5432/fleet") == "postgresql://kiosk@db:5432/fleet"


def test_the_store_is_looked_up_by_the_url_scheme() -> None:
    assert STORES.names() == ["postgres", "postgresql", "sqlite"]
    assert [url_scheme(url) for url in ("", "sqlite:/tmp/m.db", "postgresql://k@db/fleet", "mysql://x")] == [
        "sqlite",
        "sqlite",
        "postgresql",
        "mysql",
    ]
    assert url_scheme("/tmp/memory.db") == "/tmp/memory.db"  # no scheme: no store the registry knows
