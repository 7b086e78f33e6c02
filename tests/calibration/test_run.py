"""Calibration from labelled image folders: counts, pairs files, unreadable images, bad data, apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kiosk.calibration import load_calibration
from kiosk.calibration.run import DataSpec, run_calibration
from kiosk.errors import CalibrationError, DataError

from .fakes import FAKE_SHA, MakeFolder, PixelEmbedder


def _run(spec: DataSpec, embedder: PixelEmbedder | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    return run_calibration(spec, embedder or PixelEmbedder(), encoder_name="pixels", bootstrap=False, **kwargs)  # type: ignore[arg-type]


def test_all_pairs_counts_and_a_separating_threshold(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=12, per_identity=4)
    stages: list[str] = []
    result = _run(DataSpec(folder, benchmark="synthetic"), progress=lambda stage, done, total: stages.append(stage))
    calibration = result.calibration
    assert calibration.counts.genuine == 12 * 6
    assert calibration.counts.impostor == 48 * 47 // 2 - 72
    assert calibration.dataset.protocol == "all-pairs" and calibration.dataset.identities == 12
    assert calibration.encoder.sha256 == FAKE_SHA and calibration.modality == "face"
    figures = calibration.figures
    assert figures.impostor_mode < figures.tau_d < figures.genuine_mode
    assert calibration.operating_points["tau_d"].far.errors <= 2
    assert {"embed", "score", "analyse"} <= set(stages)
    strict = calibration.operating_points["strict"].threshold
    assert strict == max(figures.tau_d, calibration.operating_points["far"].threshold)
    assert calibration.rule == "strict" and calibration.threshold == strict
    assert not calibration.operating_points["far"].resolved  # 1,056 impostors cannot resolve FAR 1e-4
    assert any("not resolved" in warning for warning in calibration.warnings)


def test_rule_choice_without_recomputing(image_folder: MakeFolder) -> None:
    result = _run(DataSpec(image_folder()))
    assert result.with_rule("tau_d").threshold == result.calibration.figures.tau_d
    assert result.with_rule("eer").threshold == result.calibration.figures.eer_threshold
    looser = result.with_rule("far", target_far=0.05)
    assert looser.calibration.target_far == 0.05
    assert looser.calibration.operating_points["far"].far.value <= 0.05
    assert looser.calibration.operating_points["far"].resolved


def test_unreadable_images_are_listed_skipped_and_counted(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=10, per_identity=5, corrupt=1, blank=1)
    result = _run(DataSpec(folder))
    dataset = result.calibration.dataset
    assert dataset.images == 50
    assert len(dataset.unreadable) == 2
    assert any("corrupt_0.png: not a decodable image" in line for line in dataset.unreadable)
    assert any("blank_0.png: blank image" in line for line in dataset.unreadable)
    assert any("2 unreadable image(s) skipped" in warning for warning in result.calibration.warnings)
    assert result.calibration.counts.genuine == 10 * 10


def test_too_many_unreadable_images_is_an_error(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=3, per_identity=2, corrupt=4)
    with pytest.raises(DataError, match="4 of 10 images could not be read"):
        _run(DataSpec(folder))


def test_one_identity_is_an_error(image_folder: MakeFolder) -> None:
    with pytest.raises(DataError, match="only one identity"):
        _run(DataSpec(image_folder(identities=1, per_identity=6)))


def test_single_images_give_no_genuine_pairs(image_folder: MakeFolder) -> None:
    with pytest.raises(DataError, match="no genuine pairs"):
        _run(DataSpec(image_folder(identities=8, per_identity=1)))


def test_missing_manifest_and_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        _run(DataSpec(tmp_path / "nowhere"))
    with pytest.raises(DataError, match=r"no manifest\.csv"):
        _run(DataSpec(tmp_path))


def test_lfw_pairs_file(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=10, per_identity=3, lfw_layout=True)
    lines = ["2\t5"]
    lines += [f"Person_{p:03d}\t1\t2" for p in range(10)]
    lines += [f"Person_{p:03d}\t1\tPerson_{(p + 1) % 10:03d}\t3" for p in range(10)]
    lines.append("Person_000\t1\tPerson_000\t9")  # image 9 does not exist: skipped, counted
    (folder / "pairs.txt").write_text("\n".join(lines) + "\n")
    result = _run(DataSpec(folder, pairs_file=folder / "pairs.txt"))
    calibration = result.calibration
    assert calibration.dataset.protocol == "pairs"
    assert (calibration.counts.genuine, calibration.counts.impostor) == (10, 10)
    assert calibration.dataset.skipped_pairs == 1
    assert any("Person_000_0009.jpg" in line for line in calibration.dataset.unreadable)


def test_pairs_file_with_only_genuine_pairs_is_an_error(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=4, per_identity=3, lfw_layout=True)
    (folder / "pairs.txt").write_text("".join(f"Person_{p:03d} 1 2\n" for p in range(4)))
    with pytest.raises(CalibrationError, match="no impostor pairs"):
        _run(DataSpec(folder, pairs_file=folder / "pairs.txt"))


def test_unparsable_pairs_line(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=2, per_identity=2, lfw_layout=True)
    (folder / "pairs.txt").write_text("Person_000 one two\n")
    with pytest.raises(DataError, match=r"pairs\.txt:1: cannot parse"):
        _run(DataSpec(folder, pairs_file=folder / "pairs.txt"))


def test_impostor_sampling_is_deterministic(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=20, per_identity=3)
    first = _run(DataSpec(folder, max_impostors=400)).calibration
    second = _run(DataSpec(folder, max_impostors=400)).calibration
    assert first.counts.impostor_available == 60 * 59 // 2 - 60
    assert 250 < first.counts.impostor < 550
    assert first.counts.impostor == second.counts.impostor
    assert first.figures.tau_d == second.figures.tau_d
    assert first.dataset.impostor_fraction < 1


def test_apply_writes_json_and_png_that_load_back(image_folder: MakeFolder, tmp_path: Path) -> None:
    result = _run(DataSpec(image_folder(), benchmark="synthetic"), PixelEmbedder("palm"))
    json_path, png_path = result.apply(tmp_path / "out")
    assert json_path.name == "palm-synthetic.json"
    assert png_path is not None and png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    loaded = load_calibration(json_path)
    assert loaded.plot == "palm-synthetic.png"
    assert loaded.threshold == result.threshold
    payload = json.loads(json_path.read_text())
    for key in ("modality", "benchmark", "threshold", "rule", "encoder", "dataset", "counts", "figures", "created"):
        assert key in payload
    assert not list((tmp_path / "out").glob("*.tmp*"))
