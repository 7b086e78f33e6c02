"""Issue #34, point 2: enrollment poisoning, with the real face models on real LFW images.

Before the fix, "Mallory" enrolled from images each holding Colin and Tony side by side (the detector's most
prominent face became Mallory's template), or from one image given twice to reach the sample count, and Colin's
later probes then verified as Mallory or as nobody (a tie under best-match). Now a sample with two faces and a
repeated sample are refused, templates that already verify as another enrolled person are refused, and Colin's
probe still verifies as Colin.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from bench.attacks.enrollment import canvas, read
from kiosk.config import KioskConfig
from kiosk.errors import ProbeError
from kiosk.identity.gallery import (
    EnrollmentConflict,
    Sample,
    build_gallery,
    enroll,
    enrollment_embed,
)
from kiosk.identity.gate import GateRule, gate
from kiosk.identity.probe import Probe
from kiosk.memory.sqlite_store import SqliteStore

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]

COLIN, TONY = "Colin_Powell", "Tony_Blair"


def crops(data_dir: Path, person: str) -> list[Path]:
    folder = data_dir / "lfw3d_frontalized" / "images" / person
    found = sorted(folder.glob("*.jpg"))
    if len(found) < 14:
        pytest.skip(f"LFW3D images of {person} not found under {folder}")
    return found


@pytest.fixture(scope="module")
def face(base_config: KioskConfig) -> Any:
    from kiosk.identity.face import load_face_embedder

    return load_face_embedder(base_config)


@pytest.fixture(scope="module")
def tau(base_config: KioskConfig, face: Any) -> float:
    from kiosk.calibration.active import active_threshold

    return active_threshold(base_config, "face", face.model_sha256)


def gallery_of(face: Any, images: Sequence[np.ndarray], min_samples: int = 3, precropped: bool = False) -> Any:
    samples = [Sample(f"image {i + 1}", image) for i, image in enumerate(images)]
    return build_gallery(face, samples, min_samples=min_samples, embed=enrollment_embed(face, precropped=precropped))


@pytest.fixture()
def enrolled(face: Any, tau: float, data_dir: Path) -> tuple[SqliteStore, dict[str, int]]:
    """Colin and Tony enrolled from four single-face images each."""
    store = SqliteStore(":memory:")
    ids = {}
    for person in (COLIN, TONY):
        gallery = gallery_of(face, [canvas(path) for path in crops(data_dir, person)[:4]])
        ids[person] = enroll(store, person, gallery, threshold=tau).user_id
    return store, ids


def usable_embeddings(face: Any, paths: Sequence[Path], count: int) -> list[np.ndarray]:
    """The first `count` embeddings of the photos the pipeline accepts (a few LFW faces are too turned)."""
    found = []
    for path in paths:
        try:
            found.append(face.embed_image(canvas(path)))
        except ProbeError:
            continue
        if len(found) == count:
            break
    return found


def verified_as(store: SqliteStore, face: Any, tau: float, *images: np.ndarray) -> tuple[int, ...]:
    """Who the gate verifies from these images fused into one probe, as the camera fuses its frames."""
    mean = np.mean([face.embed_image(image) for image in images], axis=0)
    probe = Probe("face", mean / np.linalg.norm(mean), face.model_sha256, 0.0, frames=len(images))
    return gate(probe, store.templates("face"), GateRule(tau)).matched_owner_ids


def test_the_detector_sees_both_faces_of_the_attack_image(face: Any, data_dir: Path) -> None:
    analysis = face.analyse(canvas(crops(data_dir, COLIN)[4], crops(data_dir, TONY)[4]))
    assert analysis.faces_in_view == 2
    assert face.analyse(canvas(crops(data_dir, COLIN)[4])).faces_in_view == 1


def test_two_face_images_are_refused(
    enrolled: tuple[SqliteStore, dict[str, int]], face: Any, tau: float, data_dir: Path
) -> None:
    store, ids = enrolled
    colin, tony = crops(data_dir, COLIN), crops(data_dir, TONY)
    attack = [canvas(colin[k], tony[k]) for k in range(4, 8)]
    gallery = gallery_of(face, attack, min_samples=2)
    assert gallery.accepted == []
    assert all(outcome.reason == "2 faces in the image" for outcome in gallery.outcomes)
    with pytest.raises(ProbeError, match="only 0 of 4 face samples are usable"):
        enroll(store, "Mallory", gallery, threshold=tau)
    # the same images as tight crops side by side (--precropped) are refused too
    glued = [np.hstack([read(colin[k]), read(tony[k])]) for k in range(4, 8)]
    precropped = gallery_of(face, glued, min_samples=2, precropped=True)
    assert precropped.accepted == [] and all("faces in one crop" in o.reason for o in precropped.outcomes)
    assert store.user_by_name("Mallory") is None
    assert verified_as(store, face, tau, canvas(colin[12]), canvas(colin[13])) == (ids[COLIN],)
    assert verified_as(store, face, tau, canvas(tony[12]), canvas(tony[13])) == (ids[TONY],)


def test_a_repeated_image_does_not_count_twice(
    enrolled: tuple[SqliteStore, dict[str, int]], face: Any, tau: float, data_dir: Path
) -> None:
    store, _ = enrolled
    colin = crops(data_dir, COLIN)
    image = canvas(colin[8])
    reencoded = np.asarray(
        cv2.imdecode(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])[1], cv2.IMREAD_COLOR)
    )
    gallery = gallery_of(face, [image, image.copy(), reencoded, canvas(colin[9])])
    reasons = [outcome.reason for outcome in gallery.outcomes]
    assert reasons[1] == "duplicate of image 1 (the same image)"
    assert reasons[2].startswith("duplicate of image 1 (cosine 0.99")
    assert not gallery.sufficient and gallery.problem == "only 2 of 4 face samples are usable, 3 needed"
    with pytest.raises(ProbeError, match="only 2 of 4"):
        enroll(store, "Mallory", gallery, threshold=tau)


def test_templates_of_an_enrolled_person_under_another_name_are_refused(
    enrolled: tuple[SqliteStore, dict[str, int]], face: Any, tau: float, data_dir: Path
) -> None:
    store, ids = enrolled
    colin = crops(data_dir, COLIN)
    before = {t.id for t in store.templates("face")}
    gallery = gallery_of(face, [canvas(path) for path in colin[8:12]], min_samples=2)
    assert gallery.sufficient
    with pytest.raises(EnrollmentConflict, match=r"match an enrolled person \(Colin_Powell\)") as refused:
        enroll(store, "Mallory", gallery, threshold=tau)
    assert "nothing was stored" in refused.value.message
    assert store.user_by_name("Mallory") is None and {t.id for t in store.templates("face")} == before
    # the kiosk's own enrolment says that the face is taken, not whose it is
    with pytest.raises(EnrollmentConflict, match="already enrolled under another name") as hidden:
        enroll(store, "Mallory", gallery, threshold=tau, admin=False)
    assert COLIN not in hidden.value.one_line()
    # re-enrolling Colin himself from the new images is the renewal path and stays allowed
    renewed = enroll(store, COLIN, gallery, threshold=tau)
    assert not renewed.created and renewed.user_id == ids[COLIN]
    assert verified_as(store, face, tau, canvas(colin[13])) == (ids[COLIN],)


def test_the_kiosk_enrolment_refuses_a_face_enrolled_under_another_name(
    enrolled: tuple[SqliteStore, dict[str, int]], face: Any, tau: float, data_dir: Path
) -> None:
    from kiosk.app.enrolment import Enrolment
    from kiosk.app.views import EnrollSample

    store, _ = enrolled
    events: list[str] = []
    live = types.SimpleNamespace(
        face=face,
        assistant=types.SimpleNamespace(threshold=lambda modality, sha: tau),
        forget_templates=lambda: None,
        has_camera=True,
    )
    challenge = types.SimpleNamespace(available=False)
    audit = types.SimpleNamespace(record=lambda action, **details: events.append(action))
    enrolment = Enrolment(store, live, challenge, audit)  # type: ignore[arg-type]
    colin = crops(data_dir, COLIN)
    frames = [EnrollSample(True, None, face.embed_image(canvas(path))) for path in colin[8:13]]
    with pytest.raises(EnrollmentConflict, match="already enrolled under another name"):
        enrolment.enroll("Mallory", frames)
    assert events == ["enrollment-refused"] and store.user_by_name("Mallory") is None
    frozen = [EnrollSample(True, None, frames[0].embedding) for _ in range(5)]  # a frozen feed's copies
    with pytest.raises(ProbeError, match="only 1 of 5"):
        enrolment.enroll("Mallory", frozen)


def test_the_kiosk_renews_an_enrolled_name_only_from_the_face_it_has(
    enrolled: tuple[SqliteStore, dict[str, int]], face: Any, tau: float, data_dir: Path
) -> None:
    """Anyone at the kiosk can open the enrolment screen: typing "Colin_Powell" must not hand them Colin's notes."""
    from kiosk.app.enrolment import Enrolment
    from kiosk.app.views import EnrollSample

    store, ids = enrolled
    live = types.SimpleNamespace(
        face=face,
        assistant=types.SimpleNamespace(threshold=lambda modality, sha: tau),
        forget_templates=lambda: None,
        has_camera=True,
    )
    audit = types.SimpleNamespace(record=lambda action, **details: None)
    enrolment = Enrolment(store, live, types.SimpleNamespace(available=False), audit)  # type: ignore[arg-type]
    george = crops(data_dir, "George_W_Bush")
    before = sorted(t.id for t in store.templates("face"))
    impostor = [EnrollSample(True, None, vector) for vector in usable_embeddings(face, george, 5)]
    with pytest.raises(EnrollmentConflict, match="taken by an enrolled person"):
        enrolment.enroll(COLIN, impostor)
    assert sorted(t.id for t in store.templates("face")) == before
    colin = [EnrollSample(True, None, vector) for vector in usable_embeddings(face, crops(data_dir, COLIN)[8:13], 5)]
    assert enrolment.enroll(COLIN, colin).id == ids[COLIN]  # Colin himself renews his templates
    assert verified_as(store, face, tau, canvas(crops(data_dir, COLIN)[13])) == (ids[COLIN],)
