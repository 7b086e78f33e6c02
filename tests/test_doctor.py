import os
from pathlib import Path

import pytest

from kiosk.config import KioskConfig
from kiosk.doctor import check_database, check_disk, check_models, run_checks
from kiosk.memory.open import open_store
from kiosk.models import ModelStore


def _healthy(config: KioskConfig, data_dir: Path) -> KioskConfig:
    config.capture.face_source = str(data_dir / "face_video" / "short_hamilton_clip.mp4")
    with open_store(config) as store:
        store.add_user("someone")
    return config


@pytest.mark.real_models
@pytest.mark.real_data
def test_green_on_a_healthy_terminal(config: KioskConfig, data_dir: Path) -> None:
    checks = run_checks(_healthy(config, data_dir))
    failed = [c for c in checks if c.status == "fail"]
    assert not failed, failed
    assert {c.name for c in checks} >= {"memory database", "disk", "face source", "calibration face", "llm build"}


def test_missing_database_is_red_with_a_fix(config: KioskConfig) -> None:
    [check] = check_database(config)
    assert check.status == "fail"
    assert "does not exist" in check.message and "backup" in check.fix
    assert not config.paths.db.exists(), "the doctor must not create the DB it reports missing"


def test_corrupted_model_is_red_and_named(config: KioskConfig, model_store: ModelStore, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    for name, entry in model_store.manifest.models.items():
        if entry.optional:
            continue
        source = model_store.ensure(name)
        os.symlink(source, models / source.name)
    victim = models / model_store.manifest.get("mtcnn-pnet").file
    victim.unlink()
    victim.write_bytes(b"not the model")
    config.paths.models_dir = models
    failed = [c for c in check_models(config) if c.status == "fail"]
    assert [c.name for c in failed] == ["model mtcnn-pnet"]
    assert "corrupt" in failed[0].message and "kiosk models pull mtcnn-pnet" in failed[0].fix


def test_disk_check_reports_free_space(config: KioskConfig) -> None:
    [check] = check_disk(config)
    assert check.status in ("ok", "warn") and "GiB free" in check.message


def test_a_camera_that_does_not_exist_is_red(config: KioskConfig) -> None:
    config.capture.face_source = "/dev/video-none"
    checks = run_checks(config, skip=("models", "llm build", "calibration", "database", "disk"))
    assert checks[0].status == "fail" and "no frame" in checks[0].message


def test_fleet_database_is_checked_over_the_network(config: KioskConfig, pg_database: tuple[str, str]) -> None:
    from kiosk.memory.fleet_store import FleetStore
    from kiosk.memory.pg_schema import FLEET_LATEST_VERSION

    config.store.url = pg_database[1]
    with FleetStore(config.store.url, config.paths.data_dir / "fleet-queue.db") as store:
        store.add_user("someone")
    [check] = check_database(config)
    assert check.status == "ok" and f"fleet schema v{FLEET_LATEST_VERSION}, 1 users, 0 notes" in check.message
    assert "secret" not in check.message  # the URL is shown without its password
    config.store.url = "postgresql://kiosk:pw@127.0.0.1:1/none"
    [check] = check_database(config)
    assert check.status == "fail" and "unreachable" in check.message and "pw" not in check.message


def test_a_palm_only_terminal_needs_no_face_camera(config: KioskConfig, tmp_path: Path) -> None:
    from kiosk.doctor import check_cameras

    config.capture.face_source = ""
    [face] = check_cameras(config, wait_s=0.1)
    assert face.status == "fail" and "no face camera" in face.message
    config.capture.palm_source = str(tmp_path)  # a folder of palm images stands in for the scanner
    face, *_ = check_cameras(config, wait_s=0.1)
    assert face.name == "face source" and face.status == "ok" and "palm-only" in face.message
