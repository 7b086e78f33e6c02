"""Open the configured memory store: the SQLite file, sealed at rest unless the configuration says otherwise,
or what `store.url` names instead (another SQLite file, or the fleet store on PostgreSQL + pgvector)."""

from __future__ import annotations

from pathlib import Path

from kiosk.config import KioskConfig
from kiosk.errors import ConfigError
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.memory.store import Store
from kiosk.security.sealing import master_key_for

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def sqlite_path(url: str) -> Path:
    return Path(url[len("sqlite:") :]).expanduser()


def describe_url(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    if "@" in url and url.startswith(POSTGRES_SCHEMES):
        scheme, rest = url.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        return f"{scheme}://{credentials.split(':', 1)[0]}@{host}"
    return url


def open_sqlite(config: KioskConfig, path: Path | None = None) -> SqliteStore:
    key = master_key_for(config.security, config.paths.data_dir) if config.security.encrypt_at_rest else None
    return SqliteStore(path or config.paths.db, master_key=key)


def open_store(config: KioskConfig) -> Store:
    """The store every part of the app opens: SQLite at paths.db unless store.url names another."""
    url = config.store.url.strip()
    if not url:
        return open_sqlite(config)
    if url.startswith("sqlite:"):
        return open_sqlite(config, sqlite_path(url))
    if url.startswith(POSTGRES_SCHEMES):
        from kiosk.memory.fleet_store import FleetStore

        # The same master key handling as SQLite; every terminal of the fleet must hold the same key.
        key = master_key_for(config.security, config.paths.data_dir) if config.security.encrypt_at_rest else None
        return FleetStore(url, config.store.offline_queue or config.paths.data_dir / "fleet-queue.db", master_key=key)
    raise ConfigError(
        f"store url '{describe_url(url)}' is neither 'sqlite:PATH' nor 'postgresql://...'",
        "set store.url to one of the two forms (empty for the default SQLite file)",
    )
