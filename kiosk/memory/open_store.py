"""Open the memory store the configuration names: one `store.url` line picks SQLite (default) or the fleet store."""

from __future__ import annotations

from pathlib import Path

from kiosk.config import KioskConfig
from kiosk.errors import ConfigError
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.memory.store import Store

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


def open_store_url(url: str, queue_path: Path | None = None) -> Store:
    """'sqlite:PATH' or 'postgresql://...' (a terminal with `queue_path` gets the offline queue)."""
    if url.startswith("sqlite:"):
        return SqliteStore(sqlite_path(url))
    if url.startswith(POSTGRES_SCHEMES):
        if queue_path is None:
            from kiosk.memory.postgres_store import PostgresStore

            return PostgresStore(url)
        from kiosk.memory.fleet_store import FleetStore

        return FleetStore(url, queue_path)
    raise ConfigError(
        f"store url '{describe_url(url)}' is neither 'sqlite:PATH' nor 'postgresql://...'",
        "set store.url to one of the two forms (empty for the default SQLite file)",
    )


def open_store(config: KioskConfig) -> Store:
    """The store every part of the app opens: SQLite at paths.db unless store.url names another."""
    url = config.store.url.strip()
    if not url:
        return SqliteStore(config.paths.db)
    queue = config.store.offline_queue or config.paths.data_dir / "fleet-queue.db"
    return open_store_url(url, queue)
