"""The audit log: who enrolled, deleted, logged in as admin, changed calibration or rotated keys, and when.

Append-only JSON lines in <logs>/audit.log (mode 600), rotated by size to audit.log.1 ... audit.log.N like
logging's RotatingFileHandler. It records events and ids, never memory contents: details are scalars, long
strings are cut short, and fields that would carry text a person said (content, question, answer...) are
rejected outright, so a careless caller fails in tests instead of leaking into the log.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from kiosk.config import KioskConfig
from kiosk.security.private_files import private_dir

FORBIDDEN_FIELDS = frozenset({"content", "text", "note", "notes", "question", "answer", "memory", "message", "prompt"})
MAX_DETAIL_CHARS = 200
Scalar = str | int | float | bool | None
Detail = Scalar | dict[str, int] | dict[str, float]


class AuditLog:
    def __init__(self, log_dir: Path, max_bytes: int = 1_000_000, backups: int = 10) -> None:
        self.path = log_dir / "audit.log"
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()

    def record(self, action: str, **details: Detail) -> None:
        for key, value in details.items():
            _check(key, value)
            if isinstance(value, dict):
                for inner_key, inner in value.items():
                    _check(f"{key}.{inner_key}", inner)
                    if not isinstance(inner, int | float):
                        raise ValueError(f"audit field '{key}.{inner_key}' must be a number")
        short = {k: v[:MAX_DETAIL_CHARS] if isinstance(v, str) else v for k, v in details.items()}
        entry = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "action": action, **short}
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            private_dir(self.path.parent)
            if self.path.exists() and self.path.stat().st_size + len(line) > self.max_bytes:
                self._rotate()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    def _rotate(self) -> None:
        for index in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{index + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))

    def files(self) -> list[Path]:
        """Oldest first: audit.log.N ... audit.log.1, audit.log."""
        rotated = [self.path.with_name(f"{self.path.name}.{i}") for i in range(self.backups, 0, -1)]
        return [p for p in [*rotated, self.path] if p.is_file()]

    def entries(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for path in self.files():
            out.extend(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
        return out


def _check(key: str, value: object) -> None:
    if key.rsplit(".", 1)[-1] in FORBIDDEN_FIELDS:
        raise ValueError(f"audit field '{key}' could carry memory contents; log ids, not text")
    if not isinstance(value, str | int | float | bool | type(None) | dict):
        raise ValueError(f"audit field '{key}' must be a scalar, not {type(value).__name__}")


AUDIT_BACKUPS = 10  # rotated audit log files kept


def audit_log_for(config: KioskConfig) -> AuditLog:
    return AuditLog(config.paths.logs, config.security.audit_max_bytes, AUDIT_BACKUPS)
