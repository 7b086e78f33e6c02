"""Calibration with the real embedders on small slices of the real benchmarks, and the shipped files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.calibration import active_threshold, calibration_path, load_calibration
from kiosk.calibration.embed import encoder_name, load_embedder
from kiosk.calibration.run import DataSpec, run_calibration
from kiosk.config import KioskConfig

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]


@pytest.fixture(scope="module")
def palm_embedder(base_config: KioskConfig) -> object:
    return load_embedder(base_config, "palm")


@pytest.fixture(scope="module")
def face_embedder(base_config: KioskConfig) -> object:
    return load_embedder(base_config, "face")


def test_palm_on_a_tongji_slice(base_config: KioskConfig, data_dir: Path, palm_embedder: object) -> None:
    spec = DataSpec(data_dir / "palm_tongji_palmnet", max_identities=12, benchmark="tongji")
    result = run_calibration(
        spec,
        palm_embedder,
        encoder_name=encoder_name(base_config, "palm", palm_embedder),
        bootstrap=False,  # type: ignore[arg-type]
    )
    calibration = result.calibration
    assert calibration.dataset.identities == 12 and calibration.dataset.protocol == "all-pairs"
    assert calibration.counts.genuine >= 12 * 10  # palms with several samples come first
    figures = calibration.figures
    assert figures.impostor_mode < figures.tau_d < figures.genuine_mode
    assert figures.eer < 0.1
    assert calibration.encoder.sha256 == palm_embedder.model_sha256  # type: ignore[attr-defined]


def test_face_on_an_lfw_pairs_slice(
    base_config: KioskConfig, data_dir: Path, face_embedder: object, tmp_path: Path
) -> None:
    lfw = data_dir / "lfw3d_frontalized"
    lines = (lfw / "pairs.txt").read_text().splitlines()
    subset = lines[1:31] + lines[301:331]  # 30 genuine + 30 impostor pairs of fold 1
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("\n".join(subset) + "\n")
    result = run_calibration(
        DataSpec(lfw, pairs_file=pairs, benchmark="lfw"),
        face_embedder,  # type: ignore[arg-type]
        encoder_name=encoder_name(base_config, "face", face_embedder),
        rule="tau_d",
        bootstrap=False,
    )
    calibration = result.calibration
    assert (calibration.counts.genuine, calibration.counts.impostor) == (30, 30)
    figures = calibration.figures
    assert figures.impostor_mode < figures.tau_d < figures.genuine_mode
    assert figures.eer < 0.25
    assert not calibration.operating_points["far"].resolved  # 30 impostors cannot resolve FAR 1e-4
    assert any("only 30 genuine pairs" in warning for warning in calibration.warnings)


@pytest.mark.parametrize(("modality", "fixture"), [("face", "face_embedder"), ("palm", "palm_embedder")])
def test_shipped_calibration_matches_the_shipped_encoder(
    base_config: KioskConfig, modality: str, fixture: str, request: pytest.FixtureRequest
) -> None:
    path = calibration_path(base_config, modality)
    if not path.is_file():
        pytest.skip(f"no shipped {modality} calibration at {path}")
    embedder = request.getfixturevalue(fixture)
    calibration = load_calibration(path)
    assert calibration.modality == modality
    assert calibration.counts.impostor >= 10_000  # enough to resolve the FAR = 1e-4 threshold
    assert calibration.operating_points["far"].resolved
    assert active_threshold(base_config, modality, embedder.model_sha256) == calibration.threshold
    assert (path.parent / (calibration.plot or "")).is_file()


def test_face_on_people_with_enough_images_is_calibrated_for_fused_probes(
    base_config: KioskConfig, data_dir: Path, face_embedder: object, tmp_path: Path
) -> None:
    from collections import defaultdict

    from kiosk.calibration.data import read_manifest
    from kiosk.identity.verify import FUSE_FRAMES

    lfw = data_dir / "lfw3d_frontalized"
    images = read_manifest(lfw)
    by_person: dict[str, list[Path]] = defaultdict(list)
    for path, person in zip(images.paths, images.identities, strict=True):
        by_person[person].append(path)
    wanted = 3 + FUSE_FRAMES["face"] + 1  # one spare: a few LFW3D crops are refused
    people = sorted(person for person, paths in by_person.items() if len(paths) >= wanted)[:24]
    manifest = tmp_path / "manifest.csv"
    rows = [f"{path.relative_to(lfw)},{person}" for person in people for path in sorted(by_person[person])[:wanted]]
    manifest.write_text("path,identity\n" + "\n".join(rows) + "\n")
    result = run_calibration(
        DataSpec(lfw, manifest=manifest, benchmark="lfw-slice"),
        face_embedder,  # type: ignore[arg-type]
        encoder_name=encoder_name(base_config, "face", face_embedder),
        target_far=1e-2,  # what 24 people can resolve
        bootstrap=False,
    )
    calibration = result.calibration
    fused = calibration.fused
    assert calibration.rule == "fused" and fused is not None and fused.identities >= 20
    assert calibration.threshold >= calibration.operating_points["strict"].threshold
    rows_by_frames = {row.frames: row for row in fused.trade_off}
    live = rows_by_frames[FUSE_FRAMES["face"]]
    assert live.far.value <= 1e-2
    assert live.frr.value < rows_by_frames[1].frr.value  # fusing real frames lifts the owner's score


def test_the_shipped_face_calibration_holds_its_target_for_fused_probes(base_config: KioskConfig) -> None:
    calibration = load_calibration(calibration_path(base_config, "face"))
    assert calibration.rule == "fused" and calibration.fused is not None and calibration.fused.resolved
    assert calibration.threshold >= calibration.operating_points["strict"].threshold
    for row in calibration.fused.trade_off:
        assert row.far.value <= calibration.target_far
