"""Files at rest (issue #34, point 6): the database, -wal, -shm, data and log directories readable by their
owner only; sensitive notes of a sealed store kept out of the lexical index; unsafe or missing master keys
refused, never silently replaced."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest
from stores import BACKENDS, Opener, store_opener

from kiosk.config import KioskConfig
from kiosk.memory.lexical import index_terms, indexed_text, stemmer
from kiosk.memory.note import EMBEDDING_DIM, Note
from kiosk.memory.open import open_sqlite
from kiosk.security.audit import audit_log_for
from kiosk.security.sealing import MasterKey, SealingError, load_master_key, new_key

SECRET = "The locker code is zebra 7741, written on the blue card."


@pytest.fixture(autouse=True)
def library_umask() -> Iterator[None]:
    """A program using the store as a library keeps the usual umask 022: the store itself must be private."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _note(owner: int, text: str, sensitivity: str | None = None, seed: int = 0) -> Note:
    vector = np.random.default_rng(seed).standard_normal(EMBEDDING_DIM).astype(np.float32)
    moment = datetime(2024, 5, 1, tzinfo=UTC)
    return Note(None, owner, "text", text, moment, embedding=vector / np.linalg.norm(vector), sensitivity=sensitivity)


def _files_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def test_database_wal_shm_data_and_log_dirs_are_private(config: KioskConfig) -> None:
    config.paths.data_dir.chmod(0o755)  # as installs before the fix left it
    with open_sqlite(config) as store:
        owner = store.add_user("Ann").id
        store.add_note(_note(owner, "Ann planted tomatoes."))
        db = config.paths.db
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert path.exists() and _mode(path) == 0o600, (path, oct(_mode(path)))
    assert _mode(config.paths.data_dir) == 0o700
    audit_log_for(config).record("admin-login", by="test")
    assert _mode(config.paths.logs) == 0o700 and _mode(config.paths.logs / "audit.log") == 0o600

    db.chmod(0o644)  # an existing database is tightened at open too
    with open_sqlite(config):
        assert _mode(db) == 0o600


def test_the_kiosk_command_creates_everything_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOSK_")} | {"KIOSK_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "kiosk", "users", "list", "--json"],
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    created = [home, *home.rglob("*")]
    assert created and all(_mode(p) == (0o700 if p.is_dir() else 0o600) for p in created), [
        (str(p), oct(_mode(p))) for p in created
    ]


def test_sensitive_notes_stay_out_of_the_lexical_index_but_are_found_by_meaning(config: KioskConfig) -> None:
    with open_sqlite(config) as store:
        owner = store.add_user("Ann").id
        secret = store.add_note(_note(owner, SECRET, sensitivity="credentials", seed=1))
        plain = store.add_note(_note(owner, "Ann's giraffe painting hangs in the hall.", seed=2))
        assert store.lexical([owner], "zebra locker code", 5) == []
        assert [i for i, _ in store.lexical([owner], "giraffe painting", 5)] == [plain.id]
        assert secret.embedding is not None
        assert store.knn([owner], secret.embedding, 1)[0][0] == secret.id
        store.checkpoint()
    raw = _files_bytes(config.paths.db)
    assert b"giraff" in raw  # the index of a plain note, as the README says
    for stem in (b"zebra", b"7741", b"locker"):
        assert stem not in raw, stem


@pytest.fixture(params=BACKENDS)
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return store_opener(request, tmp_path)


def test_both_stores_keep_sealed_sensitive_notes_out_of_keyword_search(open_backend: Opener) -> None:
    with open_backend(master_key=MasterKey(new_key(), "test")) as store:
        owner = store.add_user("Ann").id
        secret = store.add_note(_note(owner, SECRET, sensitivity="credentials", seed=1))
        store.add_note(_note(owner, "Ann's giraffe painting hangs in the hall.", seed=2))
        assert store.lexical([owner], "zebra locker code", 5) == []
        assert len(store.lexical([owner], "giraffe", 5)) == 1
        secret.content = SECRET + " Changed to zebra 7742."
        store.update_note(secret, "edit")
        assert store.lexical([owner], "zebra", 5) == []


def test_an_index_made_before_the_rule_loses_sensitive_stems_at_open(config: KioskConfig) -> None:
    with open_sqlite(config) as store:
        owner = store.add_user("Ann").id
        secret = store.add_note(_note(owner, SECRET, sensitivity="credentials", seed=1))
    conn = apsw.Connection(str(config.paths.db))  # what an older kiosk wrote into the index
    text = indexed_text(SECRET, [], [], "", secret.timestamp)
    conn.execute(
        "INSERT INTO note_fts (rowid, terms) VALUES (?, ?)", (secret.id, index_terms(stemmer(conn), owner, text))
    )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert b"zebra" in _files_bytes(config.paths.db)
    with open_sqlite(config) as store:
        assert store.lexical([owner], "zebra", 5) == []
    raw = _files_bytes(config.paths.db)
    assert b"zebra" not in raw and b"7741" not in raw


def test_unsafe_key_files_and_directories_are_refused(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    path = keys / "master.key"
    load_master_key("file", path, "svc")
    keys.chmod(0o777)
    with pytest.raises(SealingError, match=r"key directory .* writable by others") as caught:
        load_master_key("file", path, "svc")
    assert caught.value.hint == f"run: chmod 700 {keys}"
    keys.chmod(0o700)
    path.chmod(0o602)
    with pytest.raises(SealingError, match="writable by others"):
        load_master_key("file", path, "svc")
    path.chmod(0o600)
    if os.getuid() == 0:  # only root can give the file away
        os.chown(path, 12345, -1)
        with pytest.raises(SealingError, match="belongs to another user"):
            load_master_key("file", path, "svc")
        os.chown(path, 0, -1)
    assert load_master_key("file", path, "svc").key


def test_a_missing_key_of_a_sealed_database_is_an_error_never_a_new_key(config: KioskConfig) -> None:
    with open_sqlite(config) as store:
        store.add_user("Ann")
    key_file = config.security.key_path(config.paths.data_dir)
    key_file.unlink()
    with pytest.raises(SealingError, match="missing") as caught:
        open_sqlite(config)
    assert "restore" in caught.value.hint
    assert not key_file.exists()


def test_a_fleet_terminal_without_the_fleet_key_gets_an_error_and_no_stray_key(
    config: KioskConfig, pg_database: tuple[str, str], tmp_path: Path
) -> None:
    from kiosk.memory.open import open_store
    from kiosk.memory.postgres_store import PostgresStore

    _, terminal_url = pg_database
    with PostgresStore(terminal_url, master_key=MasterKey(new_key(), "first terminal")) as store:
        store.add_user("Ann")  # the first terminal seals the fleet with its key
    config.store.url = terminal_url
    config.store.offline_queue = tmp_path / "queue.db"
    key_file = config.security.key_path(config.paths.data_dir)
    assert not key_file.exists()
    with pytest.raises(SealingError, match="no master key file") as caught:
        open_store(config)
    assert "copy the fleet's master key" in caught.value.hint
    assert not key_file.exists()
