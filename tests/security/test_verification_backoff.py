"""Failed verifications back off in the core (Assistant.verify), on a fake clock; the audit log says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.identity.gate import BACKING_OFF, MATCHED, NO_MATCH
from kiosk.identity.probe import Probe
from kiosk.memory import SqliteStore
from kiosk.security.audit import AuditLog
from kiosk.security.backoff import verification_backoff

SHA = "e" * 64


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def face(axis: int) -> Probe:
    return Probe("face", np.eye(8, dtype=np.float32)[axis], SHA, captured_at=0.0)


def test_failed_verifications_lock_the_gate_for_longer_and_longer(
    tmp_path: Path, config: KioskConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.security.verify_free_failures, config.security.backoff_max_s = 2, 10.0
    monkeypatch.setattr("kiosk.security.backoff.BACKOFF_BASE_S", 4.0)
    clock = Clock()
    audit = AuditLog(tmp_path / "logs")
    with SqliteStore(tmp_path / "memory.db") as store:
        ann = store.add_user("Ann").id
        store.set_templates(ann, "face", np.eye(8, dtype=np.float32)[0][None, :], SHA)
        assistant = Assistant(
            store,
            None,
            None,
            config,
            thresholds={"face": 0.6},
            backoff=verification_backoff(config.security, clock),
            audit=audit,
        )
        stranger, owner = face(5), face(0)
        assert assistant.verify(stranger).reason == NO_MATCH
        assert assistant.verify(stranger).reason == NO_MATCH  # second failure: locked for 4 s
        refused = assistant.verify(owner)
        assert refused.reason == BACKING_OFF and refused.matched_owner_ids == ()
        assert assistant.identify(owner) is None  # nothing is written for anyone while locked
        clock.now += 4.1
        assert assistant.verify(stranger).reason == NO_MATCH  # third: 8 s
        clock.now += 5
        assert assistant.verify(owner).reason == BACKING_OFF
        clock.now += 3.1
        assert assistant.verify(owner).reason == MATCHED  # a success starts the count over
        assert assistant.verify(stranger).reason == NO_MATCH
        assert assistant.verify(owner).reason == MATCHED
    locks = [e["lock_s"] for e in audit.entries() if e["action"] == "verification-backoff"]
    assert locks == [4.0, 8.0]
