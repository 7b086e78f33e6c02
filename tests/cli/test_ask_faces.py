"""`kiosk ask --face A --face B ...`: several photos fused into one probe, as the camera fuses frames, on real
LFW3D photos with the real face models and the shipped calibration."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bench.attacks.enrollment import canvas
from kiosk.calibration.active import active_threshold
from kiosk.cli.ask import probe_from_faces
from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.gate import MULTIPLE_FACES, GateRule, gate
from kiosk.memory.sqlite_store import SqliteStore

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]

PERSON, OTHER = "Colin_Powell", "Tony_Blair"


def photos(data_dir: Path, person: str, tmp_path: Path, indices: range) -> list[Path]:
    """LFW3D crops of `person` pasted on a larger canvas (the detector wants room around a face), as files."""
    folder = data_dir / "lfw3d_frontalized" / "images" / person
    found = sorted(folder.glob("*.jpg"))
    if len(found) <= max(indices):
        pytest.skip(f"LFW3D images of {person} not found under {folder}")
    paths = []
    for index in indices:
        path = tmp_path / f"{person}_{index}.png"
        cv2.imwrite(str(path), canvas(found[index]))
        paths.append(path)
    return paths


def test_several_photos_make_one_fused_probe_that_the_gate_verifies(
    base_config: KioskConfig, data_dir: Path, tmp_path: Path
) -> None:
    enrolment = probe_from_faces(photos(data_dir, PERSON, tmp_path, range(0, 3)), base_config)
    store = SqliteStore(":memory:")
    user = store.add_user(PERSON)
    store.set_templates(user.id, "face", enrolment.vector[None, :], enrolment.model_sha256)
    tau = active_threshold(base_config, "face", enrolment.model_sha256)
    probe = probe_from_faces(photos(data_dir, PERSON, tmp_path, range(3, 8)), base_config)
    assert probe.frames == 5 and abs(float(np.linalg.norm(probe.vector)) - 1.0) < 1e-5
    decision = gate(probe, store.templates("face"), GateRule(tau))
    assert decision.matched_owner_ids == (user.id,)
    stranger = probe_from_faces(photos(data_dir, OTHER, tmp_path, range(0, 5)), base_config)
    assert gate(stranger, store.templates("face"), GateRule(tau)).matched_owner_ids == ()


def test_a_photo_with_two_faces_hides_memory_and_one_without_a_face_is_named(
    base_config: KioskConfig, data_dir: Path, tmp_path: Path
) -> None:
    folder = data_dir / "lfw3d_frontalized" / "images"
    pair = tmp_path / "pair.png"
    first, second = (sorted((folder / person).glob("*.jpg"))[0] for person in (PERSON, OTHER))
    cv2.imwrite(str(pair), canvas(first, second))
    probe = probe_from_faces([*photos(data_dir, PERSON, tmp_path, range(1, 3)), pair], base_config)
    assert probe.faces_in_view == 2
    assert gate(probe, [], GateRule(0.5)).reason == MULTIPLE_FACES
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((200, 200, 3), 128, np.uint8))
    with pytest.raises(ProbeError, match=r"no usable face in .*blank\.png"):
        probe_from_faces([*photos(data_dir, PERSON, tmp_path, range(1, 2)), blank], base_config)
