"""The embedding cache: reused when nothing changed, refreshed when an image or the embedding changes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from kiosk.calibration.cache import EmbeddingCache
from kiosk.calibration.embed import embed_paths

from .fakes import MakeFolder, PixelEmbedder


class MirroredPixelEmbedder(PixelEmbedder):
    """Same 'model' (sha256) with a different preprocessing setting."""

    def embed_crop(self, img: np.ndarray) -> np.ndarray:
        return super().embed_crop(np.ascontiguousarray(img[:, ::-1]))


def _paths(folder: Path) -> list[Path]:
    return sorted((folder / "images").glob("*.png"))


def test_unchanged_images_are_not_re_embedded(image_folder: MakeFolder, tmp_path: Path) -> None:
    paths = _paths(image_folder(identities=3, per_identity=3, corrupt=1))
    first_embedder, second_embedder = PixelEmbedder(), PixelEmbedder()
    first = embed_paths(first_embedder, paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    second = embed_paths(second_embedder, paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    assert first_embedder.calls == 9 and second_embedder.calls == 1
    np.testing.assert_array_equal(first.vectors, second.vectors)
    assert first.unreadable == second.unreadable and len(first.unreadable) == 1


def test_a_touched_image_is_re_embedded(image_folder: MakeFolder, tmp_path: Path) -> None:
    paths = _paths(image_folder(identities=2, per_identity=3))
    embed_paths(PixelEmbedder(), paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    stat = paths[-1].stat()
    os.utime(paths[-1], ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    embedder = PixelEmbedder()
    embed_paths(embedder, paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    assert embedder.calls == 2  # the validity check + the touched image


def test_changed_embedding_settings_invalidate_the_cache(image_folder: MakeFolder, tmp_path: Path) -> None:
    paths = _paths(image_folder(identities=2, per_identity=3))
    plain = embed_paths(PixelEmbedder(), paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    mirrored_embedder = MirroredPixelEmbedder()
    mirrored = embed_paths(mirrored_embedder, paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    assert mirrored_embedder.calls == 1 + 6
    assert not np.allclose(plain.vectors, mirrored.vectors)


def test_a_damaged_cache_file_is_only_a_slower_run(image_folder: MakeFolder, tmp_path: Path) -> None:
    paths = _paths(image_folder(identities=2, per_identity=2))
    cache = EmbeddingCache(tmp_path / "c", "k")
    embed_paths(PixelEmbedder(), paths, cache=cache)
    cache.path.write_bytes(b"garbage")
    embedder = PixelEmbedder()
    result = embed_paths(embedder, paths, cache=EmbeddingCache(tmp_path / "c", "k"))
    assert embedder.calls == 4 and result.valid.all()
