"""What faded, as the admin sees it: old unused and archived notes with their strength, never their text, and
nothing deleted (every test taking `store` runs on SQLite and on PostgreSQL, tests/memory/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from kiosk.app.admin import Admin
from kiosk.app.build import build_assistant
from kiosk.config import KioskConfig, SecurityConfig
from kiosk.local_time import TerminalClock
from kiosk.memory import SqliteStore, Store
from kiosk.memory.forgetting import Decay, faded_by_owner, faded_notes
from kiosk.security.sealing import master_key_for

from .builders import make_note

NOTE_TIME = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # make_note's timestamp
DAY = timedelta(days=1)


def _notes(store: Store) -> dict[str, int]:
    """Ann's notes: one said 90 days before `now` and never used, one as old but used 5 days before `now`,
    one said 2 days before `now`, one archived; Bo's single fresh note; a family note as old as Ann's."""
    ann, bo = store.add_user("Ann").id, store.add_user("Bo").id
    family = store.add_group("family")
    store.add_member(family.id, ann)
    ids = {
        "old": store.add_note(make_note(ann, "the dentist is on Tuesday", seed=1)).id,
        "used": store.add_note(make_note(ann, "the bins go out on Monday", seed=2)).id,
        "fresh": store.add_note(make_note(ann, "the boiler man comes at 9", seed=3, minutes=88 * 24 * 60)).id,
        "archived": store.add_note(make_note(ann, "the old door code is 1234", seed=4)).id,
        "bo": store.add_note(make_note(bo, "my bike is in the shed", seed=5, minutes=89 * 24 * 60)).id,
        "family": store.add_note(make_note(family.id, "grandma visits at Easter", seed=6)).id,
    }
    known = {name: int(value or 0) for name, value in ids.items()}
    store.reinforce([known["used"]], NOTE_TIME + 85 * DAY)
    store.archive_notes([known["archived"]], NOTE_TIME + 60 * DAY)
    return known


def test_old_unused_and_archived_notes_are_faded_weakest_first_without_their_text(store: Store) -> None:
    ids = _notes(store)
    now, decay = NOTE_TIME + 90 * DAY, Decay(half_life_days=30.0)
    ann = store.user_by_name("Ann")
    assert ann is not None
    faded = faded_notes(store, ann.id, now, decay)
    assert [item.note_id for item in faded] == sorted([ids["old"], ids["archived"]])
    assert all(abs(item.strength - 0.125) < 1e-9 for item in faded)  # three half-lives unused
    assert [item.archived for item in faded] == [False, True]
    assert "content" not in faded[0].as_dict() and "dentist" not in json.dumps(faded[0].as_dict())
    # The note used five days ago has strength 2^(-5/60) = 0.944 (one use doubled its half-life): faded under a
    # threshold above that, not under one below it.
    assert ids["used"] not in {item.note_id for item in faded_notes(store, ann.id, now, decay, below=0.9)}
    assert ids["used"] in {item.note_id for item in faded_notes(store, ann.id, now, decay, below=0.95)}
    # Listing never deletes or archives: every note is still there, the archived one still restorable.
    assert len(store.list_notes(ann.id)) == 4
    assert not store.restore_note(ids["archived"], now).archived


def test_faded_by_owner_names_people_and_groups_and_leaves_out_owners_with_none(store: Store) -> None:
    ids = _notes(store)
    by_owner = faded_by_owner(store, NOTE_TIME + 90 * DAY, Decay(half_life_days=30.0))
    assert set(by_owner) == {"Ann", "group:family"}
    assert [item.note_id for item in by_owner["group:family"]] == [ids["family"]]


def test_the_admin_sees_what_faded_at_the_terminals_time(config: KioskConfig) -> None:
    settings = config.model_copy(deep=True)
    settings.forgetting.half_life_days = 30.0
    with SqliteStore(":memory:") as store:
        ids = _notes(store)
        assistant = build_assistant(settings, store, cast(Any, None), thresholds={"face": 0.5})
        assistant.clock = TerminalClock(fixed=NOTE_TIME + 90 * DAY)
        admin = Admin(settings, assistant, cast(Any, None), cast(Any, None), owns_llm=False)
        faded = admin.faded_notes()
        assert {owner: [item.note_id for item in notes] for owner, notes in faded.items()} == {
            "Ann": sorted([ids["old"], ids["archived"]]),
            "group:family": [ids["family"]],
        }


@pytest.mark.real_models
def test_kiosk_memory_faded_lists_strengths_and_no_text(tmp_path: Path, base_config: KioskConfig) -> None:
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        ann = store.add_user("Ann").id
        old = store.add_note(make_note(ann, "the dentist is on Tuesday", seed=1)).id
        minutes_since = int((datetime.now(UTC) - NOTE_TIME).total_seconds() // 60)
        store.add_note(make_note(ann, "said just now", seed=2, minutes=minutes_since))
    env = {k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"}
    env.update(KIOSK_HOME=str(tmp_path), KIOSK_PATHS__MODELS_DIR=str(base_config.paths.models))
    done = subprocess.run(
        [sys.executable, "-m", "kiosk", "memory", "faded", "--json"], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    payload = json.loads(done.stdout)
    assert [note["id"] for note in payload["owners"]["Ann"]] == [old]
    assert 0 < payload["owners"]["Ann"][0]["strength"] < 0.5 and b"dentist" not in done.stdout
    human = subprocess.run([sys.executable, "-m", "kiosk", "memory", "faded"], capture_output=True, env=env)
    assert human.returncode == 0 and f"#{old} said 2023-05-08".encode() in human.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "kiosk", "memory", "faded", "--below", "0"], capture_output=True, env=env
    )
    assert bad.returncode == 2 and b"--below must be in (0, 1]" in bad.stderr
