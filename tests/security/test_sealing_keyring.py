"""The master key in a real python-keyring backend: keyrings.alt's file keyring (dev extras), in a temporary
XDG_DATA_HOME. 'auto' must not pick such a file backend (it becomes keyring's default once keyrings.alt is
installed and no OS secret store runs); 'keyring' uses it when the deployer chose it. Skips without the packages.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import SecurityConfig
from kiosk.security import sealing
from kiosk.security.sealing import (
    KEYRING_USER,
    activate_new_master_key,
    is_os_keyring,
    load_master_key,
    store_new_master_key,
)

keyring = pytest.importorskip("keyring", reason="python-keyring (dev extras) is not installed")
keyrings_alt_file = pytest.importorskip("keyrings.alt.file", reason="keyrings.alt (dev extras) is not installed")
SERVICE = "bio-memory-kiosk-test"


@pytest.fixture()
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """keyrings.alt's plaintext file keyring as python-keyring's backend, its file under tmp_path."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    previous = keyring.get_keyring()
    backend = keyrings_alt_file.PlaintextKeyring()
    keyring.set_keyring(backend)
    assert Path(backend.file_path).is_relative_to(tmp_path)
    yield backend
    keyring.set_keyring(previous)


def test_auto_does_not_put_the_master_key_in_a_file_keyring(file_keyring: Any, tmp_path: Path) -> None:
    assert not is_os_keyring(file_keyring)
    key_file = tmp_path / "keys" / "master.key"
    master = load_master_key("auto", key_file, SERVICE)
    assert master.source == f"file:{key_file}" and key_file.stat().st_mode & 0o777 == 0o600
    assert keyring.get_password(SERVICE, KEYRING_USER) is None
    assert not Path(file_keyring.file_path).exists()


def test_an_explicit_keyring_source_keeps_the_key_there_and_finds_it_again(file_keyring: Any, tmp_path: Path) -> None:
    key_file = tmp_path / "keys" / "master.key"
    first = load_master_key("keyring", key_file, SERVICE)
    assert first.source == "keyring" and not key_file.exists()
    stored = "".join(Path(file_keyring.file_path).read_text().split())
    # "Plaintext": the file holds base64 of the base64 key, recoverable by anyone who can read the file.
    assert base64.b64encode(base64.b64encode(first.key)).decode() in stored
    again = load_master_key("keyring", key_file, SERVICE)
    assert again.key == first.key
    other = load_master_key("keyring", key_file, SERVICE + "-other")
    assert other.key != first.key  # one key per service name


def test_rotation_through_the_keyring_backend(file_keyring: Any, tmp_path: Path) -> None:
    security = SecurityConfig(key_source="keyring", keyring_service=SERVICE)
    current = load_master_key("keyring", security.key_path(tmp_path), SERVICE)
    new = store_new_master_key(security, tmp_path, current)
    assert keyring.get_password(SERVICE, KEYRING_USER + ".next") is not None
    assert load_master_key("keyring", security.key_path(tmp_path), SERVICE).key == current.key  # not yet active
    activate_new_master_key(security, tmp_path, new)
    assert load_master_key("keyring", security.key_path(tmp_path), SERVICE).key == new.key != current.key
    assert keyring.get_password(SERVICE, KEYRING_USER + ".next") is None


def test_a_sealed_store_opens_with_its_key_in_the_keyring(file_keyring: Any, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    import numpy as np

    from kiosk.memory.note import Note
    from kiosk.memory.sqlite_store import SqliteStore

    master = load_master_key("keyring", tmp_path / "unused.key", SERVICE)
    secret = "The spare key is under the blue flowerpot."
    vector = np.ones(384, np.float32) / np.sqrt(384)
    with SqliteStore(tmp_path / "memory.db", master_key=master) as store:
        user = store.add_user("Ada")
        note = Note(None, int(user.id or 0), "face", secret, datetime(2026, 1, 1, tzinfo=UTC), embedding=vector)
        note_id = store.add_note(note).id
    assert secret.encode() not in (tmp_path / "memory.db").read_bytes()
    reloaded = load_master_key("keyring", tmp_path / "unused.key", SERVICE)
    with SqliteStore(tmp_path / "memory.db", master_key=reloaded) as store:
        found = store.get_note(int(note_id or 0))
        assert found is not None and found.content == secret


def test_a_chain_of_os_keyrings_counts_and_a_chain_with_a_file_keyring_does_not(file_keyring: Any) -> None:
    from keyring.backends.fail import Keyring as FailKeyring

    class Chain:
        def __init__(self, backends: list[Any]) -> None:
            self.backends = backends

    assert is_os_keyring(Chain([FailKeyring()]))
    assert not is_os_keyring(Chain([FailKeyring(), file_keyring]))
    assert not is_os_keyring(Chain([]))
    assert sealing._keyring_module(os_keyring_only=True) is None  # the file keyring is the active backend
    assert sealing._keyring_module() is keyring
