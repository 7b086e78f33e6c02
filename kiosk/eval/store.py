"""The LoCoMo store: the conversations ingested once into a SQLite store, cached by the hashes of everything it
depends on (data, construction, text encoder and memory settings), and copied for each run."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kiosk.config import KioskConfig
from kiosk.errors import DataError
from kiosk.eval.stages import Progress
from kiosk.memory.build import CONSTRUCTION, ConstructionTuning, construction_settings

STORE_FORMAT = "locomo-store-v1"


def cached_store_path(cache_dir: Path, key: str) -> Path:
    """Where the ingested store of `key` (store_key) is kept and reused between runs."""
    return cache_dir / "stores" / f"{key}.db"


def text_model_sha(config: KioskConfig) -> str:
    from kiosk.models import ModelStore
    from kiosk.text.encoder import TOKENIZER

    manifest = ModelStore(config.paths.models).manifest
    return hashlib.sha256(
        (manifest.get(config.text.model).sha256 + manifest.get(TOKENIZER).sha256).encode()
    ).hexdigest()


def store_key(
    config: KioskConfig,
    digest: str,
    construct: str,
    llm_sha: str | None,
    sessions: int | None,
    construction: ConstructionTuning = CONSTRUCTION,
) -> str:
    from kiosk.text.encoder import text_settings

    payload = {
        "format": STORE_FORMAT,
        "conversations": digest,
        "sessions": sessions,
        "construct": construct,
        "text_model": text_model_sha(config),
        "text_settings": text_settings(config),
        "memory_settings": construction_settings(config.memory, construction),
        "llm": llm_sha if construct == "llm" else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def build_store(
    path: Path,
    samples: list[dict[str, Any]],
    config: KioskConfig,
    text_encoder: Any,
    llm: Any,
    construct: str,
    progress: Progress,
    construction: ConstructionTuning = CONSTRUCTION,
) -> dict[str, Any]:
    """Ingest the conversations into a fresh store at `path` (renamed into place only when complete)."""
    from kiosk.memory.build import NoteBuilder
    from kiosk.memory.ingest import import_conversations
    from kiosk.memory.sqlite_store import SqliteStore

    path.parent.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix=".building-", dir=path.parent))
    try:
        source = work_dir / "conversations.json"
        source.write_text(json.dumps(samples), encoding="utf-8")
        partial = work_dir / "store.db"
        store = SqliteStore(partial)
        try:
            builder = NoteBuilder(store, text_encoder, config.memory, llm if construct == "llm" else None, construction)
            report = import_conversations(
                source,
                builder,
                store,
                mode=construct,  # type: ignore[arg-type]
                progress=lambda done, total: progress("ingest", done, total),
            )
        finally:
            store.close()
        if report.failed:
            raise DataError(
                f"{report.failed} turns failed to import (first: {report.errors[0].as_dict()})",
                "fix the conversation file",
            )
        summary = {"added": report.added, "outcomes": dict(report.outcomes)}
        (work_dir / "store.json").write_text(json.dumps(summary), encoding="utf-8")
        for suffix in ("-wal", "-shm"):
            Path(str(partial) + suffix).unlink(missing_ok=True)
        shutil.move(str(work_dir / "store.json"), str(path.with_suffix(".json")))
        shutil.move(str(partial), str(path))
        return summary
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (parallel runs build a missing store once)."""
    import fcntl

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
