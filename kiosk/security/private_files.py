"""Files at rest readable by their owner only: directories 0700, files 0600.

The kiosk's entry point sets umask 077, so whatever it creates is private; these helpers cover library use (a
store opened by another program) and installs made before, whose files were created 0644 / 0755.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077


def _tighten(path: Path, mode: int) -> None:
    try:
        if path.stat().st_mode & 0o777 & ~mode:
            path.chmod(mode)
    except FileNotFoundError:
        return
    except PermissionError:  # not ours (a shared parent directory, say): say so, never fail the open for it
        log.warning("cannot make %s private (mode %o): it belongs to another user", path, mode)


def private_dir(path: Path) -> Path:
    """`path` as a directory of mode 0700 (created when missing)."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    _tighten(path, PRIVATE_DIR)
    return path


def private_file(path: Path) -> Path:
    """`path` as a file of mode 0600: created empty when missing (O_EXCL: never truncates), else tightened."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        _tighten(path, PRIVATE_FILE)
    return path


def tighten_existing(*paths: Path) -> None:
    """Files that exist made 0600 (a database's -wal and -shm follow its mode only when SQLite creates them)."""
    for path in paths:
        if path.exists():
            _tighten(path, PRIVATE_FILE)
