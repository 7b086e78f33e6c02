"""Every admin action, one JSON line each, in <logs>/admin.log."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path


class AdminLog:
    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / "admin.log"
        self._lock = threading.Lock()

    def record(self, action: str, **details: object) -> None:
        entry = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "action": action, **details}
        line = json.dumps(entry, default=str, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    def entries(self) -> list[dict[str, object]]:
        if not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line]
