"""Open the configured memory store, found in a registry by the scheme of `store.url`: the SQLite file
(sealed at rest unless the configuration says otherwise) by default or for 'sqlite:PATH', the fleet store on
PostgreSQL + pgvector for 'postgresql://...'."""

from __future__ import annotations

from pathlib import Path

from kiosk.config import KioskConfig
from kiosk.errors import ConfigError
from kiosk.memory.sqlite_sealing import is_sealed_database
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.memory.store import Store
from kiosk.plugins import Registry
from kiosk.security.private_files import private_dir
from kiosk.security.sealing import MasterKey, SealingError, master_key_for

POSTGRES_SCHEMES = ("postgresql://", "postgres://")

STORES: Registry[Store] = Registry("memory store", "store.url")
"""URL scheme ('sqlite' for an empty URL) -> the store it opens; a factory takes (config, url)."""


def sqlite_path(url: str) -> Path:
    return Path(url[len("sqlite:") :]).expanduser()


def describe_url(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    if "@" in url and url.startswith(POSTGRES_SCHEMES):
        scheme, rest = url.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        return f"{scheme}://{credentials.split(':', 1)[0]}@{host}"
    return url


def url_scheme(url: str) -> str:
    """The registry key of a store URL: 'sqlite' for the empty default and 'sqlite:PATH', else the scheme of
    'scheme://...' (anything else is no key the registry knows)."""
    if not url or url.startswith("sqlite:"):
        return "sqlite"
    scheme, separator, _ = url.partition("://")
    return scheme if separator else url


def master_key(config: KioskConfig, sealed_database: bool = False) -> MasterKey | None:
    """The master key that seals the store at rest (None: stored in clear); for a `sealed_database` a missing
    key is an error, never a new key."""
    if not config.security.encrypt_at_rest:
        return None
    return master_key_for(config.security, config.paths.data_dir, sealed_database=sealed_database)


def open_sqlite(config: KioskConfig, path: Path | None = None) -> SqliteStore:
    path = path or config.paths.db
    if path.parent == config.paths.data_dir:
        private_dir(config.paths.data_dir)
    return SqliteStore(path, master_key=master_key(config, is_sealed_database(path)))


@STORES.register("sqlite", summary="the SQLite file paths.db, or the one 'sqlite:PATH' names")
def _sqlite_store(config: KioskConfig, url: str) -> Store:
    return open_sqlite(config, sqlite_path(url) if url else None)


def _fleet_store(config: KioskConfig, url: str) -> Store:
    from kiosk.memory.fleet_store import FleetStore

    # The same master key handling as SQLite; every terminal of the fleet must hold the same key.
    queue = config.store.offline_queue or config.paths.data_dir / "fleet-queue.db"
    key_file = config.security.key_path(config.paths.data_dir)
    had_key_file = key_file.exists()
    key = master_key(config)
    try:
        return FleetStore(url, queue, master_key=key)
    except SealingError:
        if key is not None and not had_key_file and key_file.exists():
            # A key made just now cannot open a fleet another terminal sealed: leave no stray key behind.
            key_file.unlink()
            raise SealingError(
                f"the fleet memory database is sealed but this terminal has no master key file {key_file}",
                "copy the fleet's master key file from the first terminal (docs/fleet.md); none was made",
            ) from None
        raise


for _scheme in ("postgresql", "postgres"):
    STORES.register(_scheme, summary="the fleet store shared by many terminals (PostgreSQL + pgvector)")(_fleet_store)


def open_store(config: KioskConfig) -> Store:
    """The store every part of the app opens: SQLite at paths.db unless store.url names another."""
    url = config.store.url.strip()
    try:
        plugin = STORES.get(url_scheme(url))
    except ConfigError:
        raise ConfigError(
            f"store url '{describe_url(url)}' is neither 'sqlite:PATH' nor 'postgresql://...'",
            "set store.url to one of the two forms (empty for the default SQLite file)",
        ) from None
    return plugin.factory(config, url)
