"""The shipped impostor cohort: written once per encoder, refused for another encoder or when damaged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kiosk.calibration.active import load_calibration
from kiosk.calibration.cohort import (
    Cohort,
    CohortInfo,
    build_cohort,
    cohort_images,
    cohort_path,
    load_cohort,
    save_cohort,
)
from kiosk.calibration.data import LabelledImages, read_manifest
from kiosk.config import PROJECT_ROOT
from kiosk.errors import CalibrationError, DataError

from .fakes import FAKE_SHA, MakeFolder, PixelEmbedder

SHIPPED = PROJECT_ROOT / "calibration"


def _cohort(vectors: np.ndarray, sha: str = FAKE_SHA) -> Cohort:
    info = CohortInfo(
        modality="face",
        encoder="fake",
        encoder_sha256=sha,
        templates=vectors.shape[0],
        dimension=vectors.shape[1],
        vectors_file=f"cohort-face-{sha[:16]}.npy",
        vectors_sha256="",
        source="test",
        command="test",
        created="2026-12-03T00:00:00+00:00",
    )
    return Cohort(info, vectors.astype(np.float32))


def test_a_saved_cohort_loads_back_for_its_encoder_only(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).normal(size=(20, 8))
    save_cohort(_cohort(vectors), tmp_path)
    loaded = load_cohort(tmp_path, "face", FAKE_SHA)
    np.testing.assert_allclose(loaded.vectors, vectors.astype(np.float32))
    assert loaded.info.templates == 20
    with pytest.raises(CalibrationError, match="no face impostor cohort"):
        load_cohort(tmp_path, "face", "b" * 64)
    with pytest.raises(CalibrationError, match="no palm impostor cohort"):
        load_cohort(tmp_path, "palm", FAKE_SHA)


def test_a_cohort_whose_vectors_changed_is_refused(tmp_path: Path) -> None:
    save_cohort(_cohort(np.ones((4, 3))), tmp_path)
    np.save(tmp_path / f"cohort-face-{FAKE_SHA[:16]}.npy", np.zeros((4, 3), dtype=np.float32))
    with pytest.raises(CalibrationError, match="does not match its sha256"):
        load_cohort(tmp_path, "face", FAKE_SHA)


def test_a_cohort_file_naming_another_encoder_is_refused(tmp_path: Path) -> None:
    path = save_cohort(_cohort(np.ones((4, 3))), tmp_path)
    content = json.loads(path.read_text())
    content["encoder_sha256"] = "c" * 64
    path.write_text(json.dumps(content))
    with pytest.raises(CalibrationError, match="another encoder"):
        load_cohort(tmp_path, "face", FAKE_SHA)


def test_cohort_images_leave_out_the_evaluation_identities_and_are_deterministic() -> None:
    paths = [Path(f"{person}_{i}.png") for person in "abcdef" for i in range(3)]
    images = LabelledImages(paths, [p.name[0] for p in paths])
    chosen = cohort_images(images, {"a", "b"}, identities=3, per_identity=2)
    assert chosen == cohort_images(images, {"a", "b"}, identities=3, per_identity=2)
    assert len(chosen) == 6 and not {p.name[0] for p in chosen} & {"a", "b"}
    with pytest.raises(DataError, match="only 4 identities"):
        cohort_images(images, {"a", "b"}, identities=5)


def test_build_cohort_embeds_one_row_per_readable_image(image_folder: MakeFolder, tmp_path: Path) -> None:
    folder = image_folder(identities=6, per_identity=2, corrupt=1)
    images = read_manifest(folder)
    paths = cohort_images(images, set(), identities=6)
    paths.append(folder / "images/corrupt_0.png")
    cohort = build_cohort(PixelEmbedder(), paths, encoder="pixels", source="test", command="test")
    assert cohort.vectors.shape == (6, PixelEmbedder.dimension)
    np.testing.assert_allclose(np.linalg.norm(cohort.vectors, axis=1), 1.0, rtol=1e-5)
    save_cohort(cohort, tmp_path)
    assert load_cohort(tmp_path, "face", FAKE_SHA).info.templates == 6


@pytest.mark.parametrize(("calibration", "modality"), [("face-lfw.json", "face"), ("palm-tongji.json", "palm")])
def test_the_shipped_cohorts_match_the_shipped_calibrations_and_stay_small(calibration: str, modality: str) -> None:
    sha = load_calibration(SHIPPED / calibration, modality).encoder.sha256
    cohort = load_cohort(SHIPPED, modality, sha)
    assert cohort.info.templates >= 90
    assert (SHIPPED / cohort.info.vectors_file).stat().st_size < 1_000_000
    assert cohort_path(SHIPPED, modality, sha).stat().st_size < 10_000
    assert "pairs.txt" in cohort.info.source or "tuning half" in cohort.info.source
