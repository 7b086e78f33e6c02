"""`kiosk security`: rotate the master key that wraps every user's data key."""

from __future__ import annotations

import typer

from kiosk.cli.common import JsonOption, config, emit, handle_errors
from kiosk.errors import KioskError
from kiosk.memory.open import POSTGRES_SCHEMES
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.security.audit import audit_log_for
from kiosk.security.sealing import activate_new_master_key, master_key_for, store_new_master_key


def register(app: typer.Typer) -> None:
    security = typer.Typer(help="Encryption at rest: master key rotation.", no_args_is_help=True)

    @security.command("rotate-key")
    @handle_errors
    def rotate_key_command(as_json: bool = JsonOption) -> None:
        """Re-wrap every user's data key under a new master key, then replace the old key (notes stay sealed)."""
        cfg = config()
        if not cfg.security.encrypt_at_rest:
            raise KioskError("encryption at rest is off", "set security.encrypt_at_rest = true first")
        if cfg.store.url.strip().startswith(POSTGRES_SCHEMES):
            # Every terminal of a fleet holds the same key: replacing it here alone would lock this one out.
            raise KioskError(
                "this terminal uses the fleet store, whose master key all terminals share",
                "rotate it once for the fleet with the database owner's URL "
                "(PostgresStore(url, master_key=old).rotate_master_key(new), docs/fleet.md) and copy the new key "
                "file to every terminal",
            )
        current = master_key_for(cfg.security, cfg.paths.data_dir)
        with SqliteStore(cfg.paths.db, master_key=current) as store:
            new = store_new_master_key(cfg.security, cfg.paths.data_dir, current)
            rewrapped = store.rotate_master_key(new)
        activate_new_master_key(cfg.security, cfg.paths.data_dir, new)
        audit_log_for(cfg).record(
            "master-key-rotated", old=current.fingerprint, new=new.fingerprint, user_keys=rewrapped, by="cli"
        )
        emit(
            {"rotated": True, "user_keys": rewrapped, "fingerprint": new.fingerprint},
            as_json,
            lambda p: f"master key rotated ({p['user_keys']} user keys re-wrapped); back up the new key now",
        )

    app.add_typer(security, name="security")
