"""AES-GCM sealing and the master key: file created 0600 at first run, keyring when usable, clear errors."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from kiosk.security import sealing
from kiosk.security.sealing import Cipher, MasterKey, SealingError, load_master_key, new_key


def test_sealed_values_open_only_with_the_same_key_and_associated_data() -> None:
    cipher = Cipher(new_key())
    sealed = cipher.seal(b"secret", b"note:1:2:content")
    assert b"secret" not in sealed and sealed != cipher.seal(b"secret", b"note:1:2:content")  # fresh nonce
    assert cipher.open(sealed, b"note:1:2:content") == b"secret"
    with pytest.raises(SealingError, match="failed authentication"):
        cipher.open(sealed, b"note:2:2:content")  # moved to another row
    with pytest.raises(SealingError, match="failed authentication"):
        Cipher(new_key()).open(sealed, b"note:1:2:content")
    with pytest.raises(SealingError, match="truncated"):
        cipher.open(sealed[:10], b"note:1:2:content")
    flipped = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(SealingError):
        cipher.open(flipped, b"note:1:2:content")


def test_key_file_is_created_0600_once_and_reloaded(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "master.key"
    first = load_master_key("file", path, "svc")
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_master_key("auto", path, "svc").key == first.key
    assert first.key.hex() not in repr(first)


def test_unsafe_or_damaged_key_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    load_master_key("file", path, "svc")
    path.chmod(0o644)
    with pytest.raises(SealingError, match="readable by others"):
        load_master_key("file", path, "svc")
    path.write_bytes(b"not base64 !!")
    path.chmod(0o600)
    with pytest.raises(SealingError, match="damaged"):
        load_master_key("file", path, "svc")
    path.write_bytes(base64.b64encode(b"short"))
    with pytest.raises(SealingError, match="256-bit"):
        load_master_key("file", path, "svc")


class FakeKeyring:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, user: str) -> str | None:
        return self.entries.get((service, user))

    def set_password(self, service: str, user: str, value: str) -> None:
        self.entries[(service, user)] = value


def test_a_usable_keyring_holds_the_key_when_no_key_file_exists(tmp_path: Path, monkeypatch: Any) -> None:
    keyring = FakeKeyring()
    monkeypatch.setattr(sealing, "_keyring_module", lambda os_keyring_only=False: keyring)
    path = tmp_path / "master.key"
    first = load_master_key("auto", path, "svc")
    assert first.source == "keyring" and not path.exists()
    assert load_master_key("keyring", path, "svc").key == first.key
    monkeypatch.setattr(sealing, "_keyring_module", lambda os_keyring_only=False: None)
    with pytest.raises(SealingError, match="no usable keyring"):
        load_master_key("keyring", path, "svc")
    assert load_master_key("auto", path, "svc").source.startswith("file:")  # falls back to the file


def test_master_key_wraps_bound_to_its_label() -> None:
    master = MasterKey(new_key(), "test")
    data_key = new_key()
    wrapped = master.wrap(data_key, b"user-key:1:1")
    assert master.unwrap(wrapped, b"user-key:1:1") == data_key
    with pytest.raises(SealingError):
        master.unwrap(wrapped, b"user-key:2:1")
