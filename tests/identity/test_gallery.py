"""Enrollment: outlier rejection with reasons, minimum samples, template replacement that keeps notes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.errors import DataError, ProbeError, StoreError
from kiosk.identity.gallery import (
    Sample,
    build_gallery,
    delete_user_by_name,
    enroll,
    medoid_index,
    samples_from_paths,
)
from kiosk.memory.note import Note
from kiosk.memory.sqlite_store import SqliteStore

SHA = "f" * 64
TAU = 0.9  # FakeEmbedder: samples of one person score >= 0.92, of two people 0.1


class FakeEmbedder:
    """Embeds a uniform gray image by its level: 0 => no face, 1..9 => person A, 200+ => someone else."""

    modality = "face"
    model_sha256 = SHA

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        level = int(image.reshape(-1)[0])
        if level == 0:
            raise ProbeError("no face found", "face the camera")
        vector = np.zeros(16, np.float32)
        if level >= 200:
            vector[1] = 1.0
            vector[0] = 0.1
        else:
            vector[0] = 1.0
            vector[2 + level % 10] = 0.3
        return vector


def gray(level: int) -> np.ndarray:
    return np.full((4, 4, 3), level, np.uint8)


def samples(*levels: int | None) -> list[Sample]:
    return [
        Sample(f"s{i}", None if level is None else gray(level), "unreadable image" if level is None else None)
        for i, level in enumerate(levels)
    ]


@pytest.fixture()
def store() -> SqliteStore:
    return SqliteStore(":memory:")


def test_outliers_and_refusals_are_rejected_with_reasons() -> None:
    gallery = build_gallery(FakeEmbedder(), samples(1, 2, 250, 3, 0, None), min_samples=3, outlier_min_cosine=0.5)
    reasons = {o.label: o.reason for o in gallery.outcomes}
    assert [o.label for o in gallery.accepted] == ["s0", "s1", "s3"]
    assert reasons["s2"].startswith("outlier: cosine 0.") and "< 0.50" in reasons["s2"]
    assert reasons["s4"] == "no face found"
    assert reasons["s5"] == "unreadable image"
    assert gallery.sufficient and gallery.problem is None
    assert gallery.vectors.shape == (3, 16) and gallery.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(gallery.vectors, axis=1), 1.0, atol=1e-6)
    outlier = next(o for o in gallery.outcomes if o.label == "s2")
    assert outlier.cosine_to_medoid is not None and outlier.cosine_to_medoid < 0.5
    assert gallery.as_dict()["rejected"] == 3


def test_too_few_good_samples_is_reported_and_stores_nothing(store: SqliteStore) -> None:
    gallery = build_gallery(FakeEmbedder(), samples(1, 0, 0), min_samples=2)
    assert not gallery.sufficient
    assert gallery.problem == "only 1 of 3 face samples are usable, 2 needed"
    with pytest.raises(ProbeError, match="only 1 of 3"):
        enroll(store, "Ana", gallery, threshold=TAU)
    assert store.list_users() == []


def test_two_disagreeing_samples_are_both_rejected() -> None:
    gallery = build_gallery(FakeEmbedder(), samples(1, 250), min_samples=1)
    assert gallery.accepted == []
    assert all("disagree" in o.reason for o in gallery.outcomes)


def test_single_sample_when_allowed() -> None:
    gallery = build_gallery(FakeEmbedder(), samples(4), min_samples=1)
    assert gallery.sufficient and len(gallery.vectors) == 1


def test_max_templates_keeps_an_even_spread() -> None:
    gallery = build_gallery(FakeEmbedder(), samples(*range(1, 10)), min_samples=1, max_templates=3)
    assert [o.label for o in gallery.accepted] == ["s0", "s4", "s8"]
    assert sum("not kept" in o.reason for o in gallery.outcomes) == 6
    assert len(gallery.vectors) == 3


def test_medoid_is_the_most_central_vector() -> None:
    vectors = np.array([[1, 0], [0.8, 0.6], [0.6, 0.8], [0, 1]], np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert medoid_index(vectors) in (1, 2)


def _note(owner_id: int) -> Note:
    embedding = np.zeros(384, np.float32)
    embedding[0] = 1.0
    return Note(None, owner_id, "face", "likes tea", datetime.now(UTC), embedding=embedding)


def test_enroll_creates_then_replaces_templates_keeping_notes(store: SqliteStore) -> None:
    first = enroll(store, "Ana", build_gallery(FakeEmbedder(), samples(1, 2, 3), min_samples=3), threshold=TAU)
    assert first.created and first.templates == 3 and first.name == "Ana"
    note = store.add_note(_note(first.user_id))
    again = enroll(store, "Ana", build_gallery(FakeEmbedder(), samples(4, 5, 6, 7), min_samples=3), threshold=TAU)
    assert not again.created and again.user_id == first.user_id and again.templates == 4
    templates = store.templates("face")
    assert len(templates) == 4 and {t.user_id for t in templates} == {first.user_id}
    kept = store.get_note(int(note.id))  # type: ignore[arg-type]
    assert kept is not None and kept.owner_id == first.user_id
    assert store.count_notes(first.user_id) == 1
    assert [u.name for u in store.list_users()] == ["Ana"]


def test_failed_template_write_does_not_leave_an_empty_user(store: SqliteStore) -> None:
    class BrokenStore:
        def __init__(self, inner: SqliteStore) -> None:
            self.inner = inner

        def add_user(self, name: str) -> object:
            return self.inner.add_user(name)

        def user_by_name(self, name: str) -> object:
            return self.inner.user_by_name(name)

        def get_user(self, user_id: int) -> object:
            return self.inner.get_user(user_id)

        def templates(self, modality: str | None = None) -> list[object]:
            return list(self.inner.templates(modality))

        def delete_user(self, user_id: int) -> None:
            self.inner.delete_user(user_id)

        def set_templates(self, user_id: int, modality: str, vectors: np.ndarray, sha: str) -> list[object]:
            raise StoreError("disk full", "free space")

    with pytest.raises(StoreError, match="disk full"):
        enroll(BrokenStore(store), "Ben", build_gallery(FakeEmbedder(), samples(1, 2, 3)), threshold=TAU)
    assert store.user_by_name("Ben") is None


def test_delete_user_by_name(store: SqliteStore) -> None:
    result = enroll(store, "Cy", build_gallery(FakeEmbedder(), samples(1, 2, 3)), threshold=TAU)
    store.add_note(_note(result.user_id))
    deleted = delete_user_by_name(store, "Cy")
    assert deleted.id == result.user_id
    assert store.list_users() == [] and store.templates() == [] and store.count_notes() == 0
    with pytest.raises(StoreError, match="no user named 'Cy'"):
        delete_user_by_name(store, "Cy")
    with pytest.raises(DataError, match="non-empty name"):
        enroll(store, "  ", build_gallery(FakeEmbedder(), samples(1, 2, 3)), threshold=TAU)


def test_samples_from_files_folders_and_bad_paths(tmp_path: Path) -> None:
    folder = tmp_path / "ana"
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f"{i}.png"), gray(i + 1))
    (folder / "broken.jpg").write_bytes(b"")
    single = tmp_path / "single.png"
    cv2.imwrite(str(single), gray(5))
    found = samples_from_paths([folder, single])
    assert [s.label for s in found] == ["ana/0.png", "ana/1.png", "ana/2.png", "ana/broken.jpg", "single.png"]
    assert found[3].image is None and "unreadable" in (found[3].problem or "")
    with pytest.raises(DataError, match="does not exist"):
        samples_from_paths([tmp_path / "nope.png"])
    not_video = tmp_path / "notes.txt"
    not_video.write_text("hello")
    with pytest.raises(DataError, match="neither an image nor a readable video"):
        samples_from_paths([not_video])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="holds no images"):
        samples_from_paths([empty])


@pytest.mark.real_data
def test_samples_from_the_face_video(data_dir: Path) -> None:
    video = data_dir / "face_video" / "short_hamilton_clip.mp4"
    found = samples_from_paths([video], video_frames=5)
    assert [s.label for s in found] == [f"short_hamilton_clip.mp4 frame {i}" for i in (0, 68, 137, 206, 274)]
    assert all(s.image is not None and s.image.shape == (360, 640, 3) for s in found)


# ---- real model, real images --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def face_embedder(base_config: object) -> object:
    from kiosk.identity.face import load_face_embedder

    return load_face_embedder(base_config)  # type: ignore[arg-type]


@pytest.mark.real_models
@pytest.mark.real_data
def test_real_enrollment_from_photo_and_video_frames(data_dir: Path, face_embedder: object, store: SqliteStore) -> None:
    from kiosk.identity.sources import read_image

    folder = data_dir / "face_video"
    found = samples_from_paths([folder / "lin-manuel-miranda.png", folder / "short_hamilton_clip.mp4"], video_frames=16)
    gallery = build_gallery(face_embedder, found, min_samples=3, outlier_min_cosine=0.5)  # type: ignore[arg-type]
    assert gallery.sufficient, gallery.problem
    accepted = [o.label for o in gallery.accepted]
    assert "lin-manuel-miranda.png" in accepted
    assert len(accepted) >= 3
    rejected = gallery.rejected
    assert rejected and all(o.reason.startswith(("no usable face", "outlier", "duplicate")) for o in rejected)
    assert gallery.model_sha256 == face_embedder.model_sha256  # type: ignore[attr-defined]
    assert gallery.vectors.shape[1] == face_embedder.dimension  # type: ignore[attr-defined]

    result = enroll(store, "Lin-Manuel Miranda", gallery, threshold=None)
    assert result.templates == len(accepted)
    impostor = face_embedder.embed_image(read_image(folder / "alex-lacamoire.png"))  # type: ignore[attr-defined]
    genuine_frames = gallery.vectors @ gallery.vectors[accepted.index("lin-manuel-miranda.png")]
    impostor_scores = gallery.vectors @ impostor
    # the same person across photo and stage frames scores well above the other person's photo
    assert float(np.median(genuine_frames)) > float(impostor_scores.max()) + 0.25


def test_precropped_entry_point() -> None:
    from kiosk.identity.gallery import precropped_embed

    class RoiEmbedder(FakeEmbedder):
        def embed_roi(self, image: np.ndarray) -> np.ndarray:
            return super().embed_image(image) * 2

    assert precropped_embed(RoiEmbedder()).__name__ == "embed_roi"
    with pytest.raises(DataError, match="no pre-cropped input"):
        precropped_embed(FakeEmbedder())
    gallery = build_gallery(FakeEmbedder(), samples(1, 2, 3), embed=lambda image: -FakeEmbedder().embed_image(image))
    plain = build_gallery(FakeEmbedder(), samples(1, 2, 3))
    np.testing.assert_allclose(gallery.vectors, -plain.vectors, atol=1e-6)


def test_select_templates_from_embeddings_already_at_hand() -> None:
    from kiosk.identity.gallery import EmbeddedSample, select_templates

    a = np.eye(16, dtype=np.float32)[0]
    b = np.eye(16, dtype=np.float32)[1]
    near = (a + 0.3 * np.eye(16, dtype=np.float32)[2]) * 3.0  # not unit length: normalised on the way in
    gallery = select_templates(
        "face",
        SHA,
        [
            EmbeddedSample("f1", a),
            EmbeddedSample("f2", near),
            EmbeddedSample("f3", b),
            EmbeddedSample("f4", None, "blur"),
        ],
        min_samples=2,
    )
    assert [o.label for o in gallery.accepted] == ["f1", "f2"]
    assert [o.reason for o in gallery.rejected][1] == "blur"
    np.testing.assert_allclose(np.linalg.norm(gallery.vectors, axis=1), 1.0, atol=1e-6)
