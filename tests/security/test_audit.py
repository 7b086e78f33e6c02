"""The audit log: JSON lines, append-only with mode 600, rotated by size, and no memory contents."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.security.audit import AuditLog


def test_records_append_as_json_lines_with_private_mode(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "logs")
    log.record("user-removed", user_id=3)
    log.record("admin-login", ok=False)
    entries = log.entries()
    assert [e["action"] for e in entries] == ["user-removed", "admin-login"]
    assert entries[0]["user_id"] == 3 and "at" in entries[0]
    assert log.path.stat().st_mode & 0o777 == 0o600


def test_rotation_keeps_the_newest_files_in_order(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, max_bytes=10_000, backups=2)
    for index in range(400):
        log.record("admin-login", ok=True, attempt=index)
    assert [p.name for p in log.files()] == ["audit.log.2", "audit.log.1", "audit.log"]
    assert all(p.stat().st_size <= 10_000 for p in log.files())
    attempts = [int(e["attempt"]) for e in log.entries()]  # type: ignore[call-overload]
    assert attempts == sorted(attempts) and attempts[-1] == 399 and attempts[0] > 0  # oldest dropped


@pytest.mark.parametrize("field", ["content", "question", "answer", "text"])
def test_fields_that_could_carry_memory_contents_are_refused(tmp_path: Path, field: str) -> None:
    with pytest.raises(ValueError, match="memory contents"):
        AuditLog(tmp_path).record("note-deleted", **{field: "my secret"})
    with pytest.raises(ValueError, match="scalar"):
        AuditLog(tmp_path).record("note-deleted", ids=[1, 2])  # type: ignore[arg-type]
    assert not (tmp_path / "audit.log").exists()
