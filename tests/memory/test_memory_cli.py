"""`kiosk remember` and `kiosk memory ...` as a user runs them (subprocess, fast construction)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kiosk.config import KioskConfig, SecurityConfig
from kiosk.memory import SqliteStore
from kiosk.security.sealing import master_key_for

pytestmark = pytest.mark.real_models


def _env(home: Path, base_config: KioskConfig) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"}
    env.update(
        KIOSK_HOME=str(home),
        KIOSK_PATHS__MODELS_DIR=str(base_config.paths.models),
        KIOSK_MEMORY__CONSTRUCTION="fast",
    )
    return env


def _kiosk(env: dict[str, str], *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kiosk", *args], capture_output=True, env=env, timeout=300, check=False
    )


def test_remember_list_delete_and_bad_messages(tmp_path: Path, base_config: KioskConfig) -> None:
    env = _env(tmp_path, base_config)
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        store.add_user("Ann")
    done = _kiosk(env, "remember", "My locker code is 4512.", "--user", "Ann", "--json")
    assert done.returncode == 0, done.stderr.decode()
    note_id = json.loads(done.stdout)["note"]["id"]
    assert json.loads(done.stdout)["note"]["sensitivity"] == "credentials"

    invalid = _kiosk(env, "remember", b"caf\xe9", "--user", "Ann")
    assert invalid.returncode == 2 and b"not valid UTF-8" in invalid.stderr and b"Traceback" not in invalid.stderr
    empty = _kiosk(env, "remember", "   ", "--user", "Ann")
    assert empty.returncode == 2 and b"message is empty" in empty.stderr
    unknown = _kiosk(env, "remember", "hello", "--user", "Nobody")
    assert unknown.returncode == 2 and b"no user named 'Nobody'" in unknown.stderr
    huge = subprocess.run(
        [sys.executable, "-m", "kiosk", "remember", "-", "--user", "Ann"],
        input=b"x" * (1 << 20),
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert huge.returncode == 2 and b"over the limit of 8,000" in huge.stderr

    listed = json.loads(_kiosk(env, "memory", "list", "--user", "Ann", "--json").stdout)
    assert listed["total"] == 1 and listed["notes"][0]["content"] == "My locker code is 4512."
    assert b"[sensitive: credentials]" in _kiosk(env, "memory", "list", "--user", "Ann").stdout
    assert _kiosk(env, "memory", "delete", str(note_id)).returncode == 0
    again = _kiosk(env, "memory", "delete", str(note_id))
    assert again.returncode == 2 and f"no note with id {note_id}".encode() in again.stderr
    assert json.loads(_kiosk(env, "memory", "list", "--user", "Ann", "--json").stdout)["total"] == 0


def test_import_reports_bad_items_keeps_going_and_resumes(tmp_path: Path, base_config: KioskConfig) -> None:
    env = _env(tmp_path, base_config)
    conversation = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "We moved to Lisbon."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": ""},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "The flat has a balcony."},
            ],
        },
    }
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([conversation]), encoding="utf-8")
    first = _kiosk(env, "memory", "import", str(path), "--user-per-conversation", "--json")
    assert first.returncode == 1  # an item failed; the rest was imported
    report = json.loads(first.stdout)
    assert (report["added"], report["failed"]) == (2, 1)
    assert report["errors"] == [{"ref": "conv-x/D1:2", "error": "message is empty — say something to remember"}]
    assert "conv-x/D1:2 failed: message is empty" in (tmp_path / "logs" / "memory.log").read_text()
    second = json.loads(_kiosk(env, "memory", "import", str(path), "--user-per-conversation", "--json").stdout)
    assert (second["added"], second["skipped"]) == (0, 2)
    both = _kiosk(env, "memory", "import", str(path), "--user", "Ann", "--user-per-conversation")
    assert both.returncode == 2 and b"exactly one of" in both.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    bad = _kiosk(env, "memory", "import", str(broken), "--user", "Ann")
    assert bad.returncode == 2 and b"not valid JSON" in bad.stderr and b"Traceback" not in bad.stderr
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        user = store.user_by_name("conv-x")
        assert user is not None and store.count_notes(user.id) == 2


def test_mark_sets_and_clears_a_notes_sensitivity_by_hand(tmp_path: Path, base_config: KioskConfig) -> None:
    from .builders import make_note

    env = _env(tmp_path, base_config)
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        ann = store.add_user("Ann").id
        note_id = store.add_note(make_note(ann, "Dr Osei moved my check on Friday")).id
    marked = _kiosk(env, "memory", "mark", str(note_id), "--sensitive", "health", "--json")
    assert marked.returncode == 0, marked.stderr.decode()
    assert json.loads(marked.stdout) == {"id": note_id, "sensitivity": "health", "scope": "personal"}
    cleared = _kiosk(env, "memory", "mark", str(note_id), "--not-sensitive")
    assert cleared.returncode == 0 and b"not sensitive" in cleared.stdout
    both = _kiosk(env, "memory", "mark", str(note_id), "--sensitive", "health", "--not-sensitive")
    assert both.returncode == 2 and b"exactly one of" in both.stderr
    typo = _kiosk(env, "memory", "mark", str(note_id), "--sensitive", "helth")
    assert typo.returncode == 2 and b"unknown sensitivity 'helth'" in typo.stderr
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        assert [e.reason for e in store.history(note_id or 0)] == ["sensitivity marked by admin"] * 2
        assert store.get_note(note_id or 0).sensitivity is None  # type: ignore[union-attr]
    audit = (tmp_path / "logs" / "audit.log").read_text(encoding="utf-8")
    assert audit.count('"action": "note-marked"') == 2 and "Osei" not in audit


def test_notes_are_dated_and_listed_in_the_terminals_time_zone(tmp_path: Path, base_config: KioskConfig) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    env = _env(tmp_path, base_config) | {"KIOSK_UI__TIME_ZONE": "Pacific/Kiritimati"}  # UTC+14: another day
    with SqliteStore(tmp_path / "memory.db", master_key=master_key_for(SecurityConfig(), tmp_path)) as store:
        store.add_user("Ann")
    done = _kiosk(env, "remember", "Dinner with Tom tonight", "--user", "Ann", "--json")
    assert done.returncode == 0, done.stderr.decode()
    note = json.loads(done.stdout)["note"]
    said = datetime.fromisoformat(note["timestamp"]).astimezone(ZoneInfo("Pacific/Kiritimati"))
    assert note["context"].startswith(f"Ann said this on {said.day} {said:%B %Y}, ")
    listed = _kiosk(env, "memory", "list", "--user", "Ann").stdout.decode()
    assert f"#{note['id']} {said:%Y-%m-%dT%H:%M} " in listed
    wrong = _kiosk(env | {"KIOSK_UI__TIME_ZONE": "Mars/Olympus"}, "memory", "list", "--user", "Ann")
    assert wrong.returncode == 2 and b"unknown time zone 'Mars/Olympus'" in wrong.stderr
