"""Embeddings of benchmark images cached on disk, so re-running a calibration (another rule, another
pairing of the same images) does not re-embed thousands of images.

One file per (encoder name, model sha256, data folder). An entry is reused only while the image file keeps
its size and modification time; failures are cached with their reason too. Settings that change the
embedding without changing the model (margins, flip augmentation) are caught by re-embedding one image.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

_EMPTY = np.empty(0, dtype=np.float32)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


class EmbeddingCache:
    def __init__(self, directory: Path, key: str, reuse: bool = True) -> None:
        """reuse=False starts empty (a cold, timed run) but still writes what it embeds."""
        self.path = directory / f"embeddings-{hashlib.sha256(key.encode()).hexdigest()[:24]}.npz"
        self._entries: dict[str, tuple[int, int, np.ndarray, str]] = {}
        self._dirty = False
        if reuse:
            self._load()

    def _load(self) -> None:
        if not self.path.is_file():
            return
        try:
            with np.load(self.path, allow_pickle=False) as stored:
                paths, sizes, mtimes = stored["paths"], stored["sizes"], stored["mtimes"]
                vectors, valid, reasons = stored["vectors"], stored["valid"], stored["reasons"]
        except (OSError, ValueError, KeyError):
            return  # a damaged cache is only a slower run
        for index, name in enumerate(paths.tolist()):
            vector = vectors[index] if valid[index] else _EMPTY
            self._entries[name] = (int(sizes[index]), int(mtimes[index]), vector, str(reasons[index]))

    def get(self, path: Path) -> tuple[np.ndarray | None, str] | None:
        """(vector, "") or (None, reason) when cached and the file is unchanged; None otherwise."""
        entry = self._entries.get(str(path))
        if entry is None or _stamp(path) != entry[:2]:
            return None
        _size, _mtime, vector, reason = entry
        return (vector if vector.size else None), reason

    def clear(self) -> None:
        self._entries.clear()
        self._dirty = True

    def put(self, path: Path, vector: np.ndarray | None, reason: str = "") -> None:
        stamp = _stamp(path)
        if stamp is None:
            return
        self._entries[str(path)] = (*stamp, _EMPTY if vector is None else vector, reason)
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        names = list(self._entries)
        dimension = max((entry[2].size for entry in self._entries.values()), default=0)
        vectors = np.zeros((len(names), dimension), dtype=np.float32)
        valid = np.zeros(len(names), dtype=bool)
        for index, name in enumerate(names):
            vector = self._entries[name][2]
            if vector.size == dimension and dimension:
                vectors[index] = vector
                valid[index] = True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(
            temporary,
            paths=np.asarray(names),
            sizes=np.asarray([self._entries[n][0] for n in names], dtype=np.int64),
            mtimes=np.asarray([self._entries[n][1] for n in names], dtype=np.int64),
            vectors=vectors,
            valid=valid,
            reasons=np.asarray([self._entries[n][3] for n in names]),
        )
        os.replace(temporary, self.path)
        self._dirty = False
