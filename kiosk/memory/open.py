"""Open the configured memory database, sealed at rest unless the configuration says otherwise."""

from __future__ import annotations

from kiosk.config import KioskConfig
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.security.sealing import master_key_for


def open_store(config: KioskConfig) -> SqliteStore:
    key = master_key_for(config.security, config.paths.data_dir) if config.security.encrypt_at_rest else None
    return SqliteStore(config.paths.db, master_key=key)
