"""Authenticated encryption at rest (AES-256-GCM) for note contents and biometric templates.

One master key per installation, from the OS keyring when one is usable, else from a key file created at
first run with mode 0600 (a file-based python-keyring backend counts only when chosen explicitly). The master
key never encrypts data directly: it wraps one random data key per user, so re-enrolling a person re-keys
only their rows and forgetting them destroys their key.

Every sealed value carries associated data naming the row it belongs to (table, id, owner, field): a
ciphertext copied into another row, or another user's row, fails authentication instead of decrypting.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kiosk.config import SecurityConfig
from kiosk.errors import KioskError

log = logging.getLogger(__name__)

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
FORMAT = b"\x01"
"""First byte of every sealed value: the format (AES-256-GCM, 96-bit random nonce)."""
OVERHEAD = len(FORMAT) + NONCE_BYTES + TAG_BYTES
KEYRING_USER = "memory-master-key"

KeySource = Literal["auto", "keyring", "file"]


class SealingError(KioskError):
    """A key is missing or wrong, or a sealed value failed authentication (tampered, swapped, other key)."""


class Cipher:
    """AES-256-GCM under one key, with a fresh random nonce per value."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise SealingError(f"a key must be {KEY_BYTES} bytes, got {len(key)}", "use sealing.new_key()")
        self._aead = AESGCM(key)

    def seal(self, plaintext: bytes, associated: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return FORMAT + nonce + self._aead.encrypt(nonce, plaintext, associated)

    def open(self, sealed: bytes, associated: bytes) -> bytes:
        if len(sealed) < OVERHEAD or sealed[:1] != FORMAT:
            raise SealingError(
                "a sealed value is truncated or of an unknown format", "restore the database from a backup"
            )
        nonce = sealed[1 : 1 + NONCE_BYTES]
        try:
            return self._aead.decrypt(nonce, sealed[1 + NONCE_BYTES :], associated)
        except InvalidTag as exc:
            raise SealingError(
                f"a sealed value failed authentication ({associated.decode(errors='replace')})",
                "the row was altered or moved, or the key is not the one it was sealed with",
            ) from exc

    def __repr__(self) -> str:
        return "Cipher(<key hidden>)"


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


@dataclass(frozen=True, repr=False)
class MasterKey:
    """The installation's key-encryption key; `fingerprint` identifies it without revealing it."""

    key: bytes
    source: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(b"kiosk-master-key-fingerprint" + self.key).hexdigest()[:16]

    def wrap(self, data_key: bytes, associated: bytes) -> bytes:
        return Cipher(self.key).seal(data_key, associated)

    def unwrap(self, wrapped: bytes, associated: bytes) -> bytes:
        return Cipher(self.key).open(wrapped, associated)

    def __repr__(self) -> str:  # never print key material into a log or traceback
        return f"MasterKey(source={self.source!r}, fingerprint={self.fingerprint})"


FILE_KEYRING_MODULES = ("keyrings.alt",)


def is_os_keyring(backend: Any) -> bool:
    """The operating system's own secret store (Secret Service, KWallet, macOS Keychain, Windows Credential
    Locker), not a python-keyring backend that keeps secrets in a file of its own (keyrings.alt's plaintext or
    password-encrypted files). Installing keyrings.alt makes its plaintext file the *default* backend when no OS
    store is running, so 'auto' must not take whatever `keyring.get_keyring()` returns."""
    chained = getattr(backend, "backends", None)  # keyring's ChainerBackend: every chained store must qualify
    if isinstance(chained, list | tuple):
        return bool(chained) and all(is_os_keyring(inner) for inner in chained)
    return not type(backend).__module__.startswith(FILE_KEYRING_MODULES)


def _keyring_module(os_keyring_only: bool = False) -> Any | None:
    """python-keyring when it has a usable backend (with `os_keyring_only`: an OS secret store), else None."""
    try:
        import keyring  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a keyring without a usable backend raises its own errors
        return None
    if "fail" in type(backend).__module__.lower() or "null" in type(backend).__name__.lower():
        return None
    if os_keyring_only and not is_os_keyring(backend):
        log.info("python-keyring's backend %s is file-based: key_source 'auto' uses the key file", type(backend))
        return None
    return keyring


def _from_keyring(keyring: Any, service: str, create: bool) -> MasterKey | None:
    try:
        stored = keyring.get_password(service, KEYRING_USER)
        if stored is None:
            if not create:
                return None
            key = new_key()
            keyring.set_password(service, KEYRING_USER, base64.b64encode(key).decode("ascii"))
            log.info("created the memory master key in the OS keyring (service %s)", service)
            return MasterKey(key, "keyring")
        key = base64.b64decode(stored)
    except Exception as exc:
        log.warning("the OS keyring could not be used (%s); falling back to the key file", exc)
        return None
    if len(key) != KEY_BYTES:
        raise SealingError(f"the keyring entry {service}/{KEYRING_USER} is not a 256-bit key", "restore the right key")
    return MasterKey(key, "keyring")


def _check_key_directory(folder: Path) -> None:
    """Whoever can write the key's directory can swap the key file: it must be the user's (or root's) and not
    writable by others."""
    if not folder.exists():
        return
    info = folder.stat()
    if info.st_uid not in (os.getuid(), 0):
        raise SealingError(
            f"the key directory {folder} belongs to another user (uid {info.st_uid})",
            "run as its owner, or move the key to a directory of your own (security.key_file)",
        )
    if info.st_mode & 0o022:
        raise SealingError(
            f"the key directory {folder} is writable by others (mode {info.st_mode & 0o777:o})",
            f"run: chmod 700 {folder}",
        )


def _missing_key(where: str) -> SealingError:
    return SealingError(
        f"the memory database is sealed but its master key {where} is missing",
        "restore the key from your key backup: a new key cannot open the sealed notes, so none is made",
    )


def _from_file(path: Path, create: bool = True) -> MasterKey:
    _check_key_directory(path.parent)
    if path.exists():
        info = path.stat()
        mode = info.st_mode & 0o777
        if info.st_uid != os.getuid():
            raise SealingError(
                f"the key file {path} belongs to another user (uid {info.st_uid})",
                f"run as its owner, or: chown {os.getuid()} {path}",
            )
        if mode & 0o077:
            exposure = "readable by others" if mode & 0o044 else "writable by others"
            raise SealingError(f"the key file {path} is {exposure} (mode {mode:o})", f"run: chmod 600 {path}")
        raw = path.read_bytes().strip()
        try:
            key = base64.b64decode(raw, validate=True)
        except ValueError as exc:
            raise SealingError(f"the key file {path} is damaged", "restore it from your key backup") from exc
        if len(key) != KEY_BYTES:
            raise SealingError(f"the key file {path} does not hold a 256-bit key", "restore it from your key backup")
        return MasterKey(key, f"file:{path}")
    if not create:
        raise _missing_key(f"file {path}")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _check_key_directory(path.parent)
    key = new_key()
    # O_EXCL: two processes starting at once must not each write a different key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _from_file(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64encode(key) + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    log.info("created the memory master key file %s (mode 600); back it up: without it the memory is unreadable", path)
    return MasterKey(key, f"file:{path}")


def load_master_key(source: KeySource, key_file: Path, keyring_service: str, *, create: bool = True) -> MasterKey:
    """The master key: keyring ('auto' when an OS keyring is usable and the file does not exist), else the key file.

    An existing key file always wins under 'auto', so installing a keyring later never orphans the data. 'auto'
    takes only an OS secret store; 'keyring' takes whatever backend python-keyring is configured with (for
    example a keyrings.alt file backend chosen with PYTHON_KEYRING_BACKEND): the deployer's explicit choice.
    `create` False (the database is already sealed): a missing key is an error, never a new key.
    """
    if source == "file" or (source == "auto" and key_file.exists()):
        return _from_file(key_file, create)
    keyring = _keyring_module(os_keyring_only=source == "auto")
    if keyring is not None:
        found = _from_keyring(keyring, keyring_service, create=create)
        if found is not None:
            return found
    if source == "keyring":
        if not create and keyring is not None:
            raise _missing_key(f"(keyring entry {keyring_service}/{KEYRING_USER})")
        raise SealingError("no usable keyring holds the memory key", "set security.key_source = 'file'")
    return _from_file(key_file, create)


def master_key_for(security: SecurityConfig, data_dir: Path, *, sealed_database: bool = False) -> MasterKey:
    """The master key the configuration points at (created at first run; never for a `sealed_database`)."""
    return load_master_key(
        security.key_source, security.key_path(data_dir), security.keyring_service, create=not sealed_database
    )


def store_new_master_key(security: SecurityConfig, data_dir: Path, current: MasterKey) -> MasterKey:
    """Phase 1 of a master key rotation: a new key kept next to the current one (never replacing it yet).

    The caller re-wraps the database under it, then calls `activate_new_master_key`; a crash in between leaves
    both keys, so the database stays readable with whichever one it was committed under.
    """
    key = MasterKey(new_key(), current.source)
    if current.source == "keyring":
        keyring = _keyring_module()
        if keyring is None:
            raise SealingError("the OS keyring is no longer usable", "rotate on a session where it is unlocked")
        keyring.set_password(security.keyring_service, KEYRING_USER + ".next", base64.b64encode(key.key).decode())
        return key
    pending = _pending_path(security.key_path(data_dir))
    pending.unlink(missing_ok=True)
    fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64encode(key.key) + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    return key


def activate_new_master_key(security: SecurityConfig, data_dir: Path, new: MasterKey) -> None:
    """Phase 2: the new key becomes the master key (after the database was re-wrapped under it)."""
    if new.source == "keyring":
        keyring = _keyring_module()
        assert keyring is not None
        keyring.set_password(security.keyring_service, KEYRING_USER, base64.b64encode(new.key).decode())
        keyring.delete_password(security.keyring_service, KEYRING_USER + ".next")
        return
    path = security.key_path(data_dir)
    os.replace(_pending_path(path), path)


def _pending_path(path: Path) -> Path:
    return path.with_name(path.name + ".new")
