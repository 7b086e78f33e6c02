"""The palm scanner in the Qt app, end to end with the real core: a folder of Tongji palm ROIs is the scanner (as
a vendor SDK writes its scans), the real CompCode palm encoder, real SQLite and MiniLM retrieval; the LLM is the
ScriptedLLM double, which repeats a note's fact only when that note is in its prompt.

- A palm-only terminal (no camera): enrol in the wizard from the scanner, ask, get the answer from one's own note;
  a stranger's palm gets the plain fallback.
- A face+palm terminal under `sensitive.verification = "face+palm"`: a sensitive note is used when the face and
  the palm verify the same person, and held back with the face alone or with someone else's palm.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from doubles import ScriptedLLM
from PySide6.QtCore import Qt

from kiosk.app.views import AnswerView, KioskServices, Presence, Progress
from kiosk.config import KioskConfig
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.ui.app import KioskWindow
from kiosk.ui.widgets.conversation import FALLBACK_REASONS, PALM_ONLY_FALLBACK_REASONS, ConversationView

from .conftest import ask_after_badge, save_screenshot, show_loaded

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]

OWNER = "0044"  # Tongji palm ids with ten samples each: the owner's and a stranger's palm
STRANGER = "0045"
ENROL_SAMPLES = slice(0, 7)  # the wizard enrols from these scans; questions are asked with the others
ASK_SAMPLES = slice(7, 10)
NOTE = "My sister Clara moved to Lisbon last spring."
QUESTION = "Where does my sister live?"
PERSONAL_REPLY = "Your sister Clara lives in Lisbon."
SENSITIVE_NOTE = "I take insulin twice a day for my diabetes."  # health: a sensitive note
SENSITIVE_QUESTION = "How often do I take insulin?"
SENSITIVE_REPLY = "Twice a day."
NO_MEMORY_REPLY = "I don't know that about you."
FALLBACK_PALM_TAU = 0.34  # only while no shipped palm calibration matches the encoder (Tongji strict is 0.341)
FALLBACK_FACE_TAU = 0.45  # as in test_real_pipeline: the performer's own video frames score 0.73-1.0
LIN_VIDEO = "short_hamilton_clip.mp4"


@pytest.fixture(scope="module")
def tongji(data_dir: Path) -> Path:
    images = data_dir / "palm_tongji_palmnet" / "images"
    if not images.is_dir():
        pytest.skip(f"Tongji palm ROIs not found at {images} (see the data README: palm_tongji_palmnet/)")
    return images


@pytest.fixture(scope="module")
def palm_embedder(base_config: KioskConfig) -> Iterator[object]:
    from kiosk.identity.palm import load_palm_embedder

    palm = load_palm_embedder(base_config)
    yield palm
    palm.close()


@pytest.fixture(scope="module")
def palm_tau(base_config: KioskConfig, palm_embedder) -> float:  # type: ignore[no-untyped-def]
    from kiosk.calibration.active import active_threshold
    from kiosk.errors import CalibrationError

    try:
        return active_threshold(base_config, "palm", palm_embedder.model_sha256)
    except CalibrationError:
        return FALLBACK_PALM_TAU


@pytest.fixture(scope="module")
def face_embedder(base_config: KioskConfig) -> object:
    from kiosk.identity.face import load_face_embedder

    return load_face_embedder(base_config)


@pytest.fixture(scope="module")
def face_tau(base_config: KioskConfig, face_embedder) -> float:  # type: ignore[no-untyped-def]
    from kiosk.calibration.active import active_threshold
    from kiosk.errors import CalibrationError

    try:
        return active_threshold(base_config, "face", face_embedder.model_sha256)
    except CalibrationError:
        return FALLBACK_FACE_TAU


def palm_scans(tongji: Path, palm_id: str, which: slice) -> list[Path]:
    return sorted(tongji.glob(f"{palm_id}_*.bmp"))[which]


class Scanner:
    """A folder of palm ROIs standing in for a USB palm scanner; the looped folder source re-reads it each pass."""

    def __init__(self, folder: Path, tongji: Path) -> None:
        self.folder = folder
        self.tongji = tongji
        folder.mkdir()

    def show(self, palm_id: str, which: slice) -> None:
        """Another palm on the scanner: the new scans go in before the old ones leave (an empty folder ends it)."""
        scans = palm_scans(self.tongji, palm_id, which)
        shown = {path.name for path in scans}
        old = [path for path in self.folder.iterdir() if path.name not in shown]
        for path in scans:
            shutil.copy(path, self.folder / path.name)
        for path in old:
            path.unlink()


def scripted_llm() -> ScriptedLLM:
    return ScriptedLLM({"Lisbon": PERSONAL_REPLY, "insulin twice a day": SENSITIVE_REPLY}, default=NO_MEMORY_REPLY)


def prompts(llm: ScriptedLLM) -> str:
    return "\n".join(call.text for call in llm.calls)


def add_notes(config: KioskConfig, text_encoder, name: str, texts: list[str]) -> None:  # type: ignore[no-untyped-def]
    from kiosk.memory.build import NoteBuilder
    from kiosk.memory.ingest import remember
    from kiosk.memory.open import open_store

    store = open_store(config)
    try:
        user = store.user_by_name(name)
        assert user is not None, name
        builder = NoteBuilder(store, text_encoder, config.memory, None)
        for day, text in enumerate(texts, start=1):
            remember(builder, user, text, mode="fast", when=datetime(2026, 3, day, tzinfo=UTC))
    finally:
        store.close()


@pytest.fixture()
def open_kiosk(qtbot, text_encoder, face_embedder) -> Iterator:  # type: ignore[no-untyped-def]
    windows: list[KioskWindow] = []

    def open_(config: KioskConfig, llm: ScriptedLLM, thresholds: dict[str, float]) -> KioskWindow:
        from kiosk.app.build import load_kiosk

        def loader(progress: Progress) -> KioskServices:
            return load_kiosk(
                config,
                progress,
                llm=llm,  # type: ignore[arg-type]
                thresholds=thresholds,
                text_encoder=text_encoder,
                face=face_embedder,  # type: ignore[arg-type]
            )

        return show_loaded(qtbot, windows, config, loader)

    yield open_
    for window in windows:
        window.shutdown()


def ask_when(qtbot, window: KioskWindow, badge: str, question: str = QUESTION):  # type: ignore[no-untyped-def]
    return ask_after_badge(qtbot, window, badge, question)


def enrol_in_wizard(qtbot, window: KioskWindow, name: str, expect_title: str):  # type: ignore[no-untyped-def]
    enroll = window.enroll
    qtbot.mouseClick(window.main.enroll_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(enroll.agree_button, Qt.MouseButton.LeftButton)
    assert enroll.title.text() == expect_title
    qtbot.waitUntil(lambda: enroll.step == "name", timeout=60_000)
    for char in name:
        enroll.findChild(type(window.main.keyboard)).press(char)
    with qtbot.waitSignal(enroll.enrolled, timeout=30_000) as blocker:
        qtbot.mouseClick(enroll.save_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


@pytest.fixture()
def palm_config(ui_config: KioskConfig, tmp_path: Path, tongji: Path) -> tuple[KioskConfig, Scanner]:
    scanner = Scanner(tmp_path / "scanner", tongji)
    ui_config.capture.palm_source = str(scanner.folder)
    ui_config.palm.roi_input = True  # Tongji images are palm ROIs, as an ROI scanner delivers them
    ui_config.ui.verify_timeout_s = 4.0
    return ui_config, scanner


def test_palm_only_terminal_enrols_answers_from_the_note_and_falls_back_for_a_stranger(  # type: ignore[no-untyped-def]
    qtbot, palm_config, open_kiosk, text_encoder, palm_tau: float
) -> None:
    config, scanner = palm_config
    config.capture.face_source = ""  # no camera: the palm scanner is the terminal's only biometric
    scanner.show(OWNER, ENROL_SAMPLES)
    llm = scripted_llm()
    window = open_kiosk(config, llm, {"palm": palm_tau})
    qtbot.waitUntil(lambda: "Not recognised" in window.main.badge.text(), timeout=30_000)  # nobody enrolled yet

    user = enrol_in_wizard(qtbot, window, "Mei", expect_title="Enrol — your palm")
    assert user.name == "Mei" and user.modalities == ("palm",)
    save_screenshot(window, "palm-only-enrolled")
    add_notes(config, text_encoder, "Mei", [NOTE])
    window.show_screen("main")

    scanner.show(OWNER, ASK_SAMPLES)  # the owner's palm again, scans the enrolment never saw
    result = ask_when(qtbot, window, "Mei")
    assert not isinstance(result, str), result
    assert result.decision == "owner" and result.presence.name == "Mei"
    assert any("Lisbon" in note.content for note in result.notes)
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "personal" and bubble.body.text() == PERSONAL_REPLY
    save_screenshot(window, "palm-only-owner")

    asked_before = len(llm.calls)
    scanner.show(STRANGER, ASK_SAMPLES)
    result = ask_when(qtbot, window, "Not recognised")
    assert result.decision == "fallback" and not result.notes
    assert "Lisbon" not in "\n".join(call.text for call in llm.calls[asked_before:])
    bubble = window.main.conversation.answers()[-1]
    # the question is about the asker and no note of theirs is about it: "I don't know", the model is not asked
    assert bubble.state == "fallback" and bubble.body.text() == UNKNOWN_ANSWER
    assert "without personal memory" in bubble.fallback_reason.text()
    save_screenshot(window, "palm-only-stranger")


def enrol_face_and_palm(config: KioskConfig, face_embedder, palm_embedder, data_dir: Path, tongji: Path) -> None:  # type: ignore[no-untyped-def]
    """Lin enrolled with face templates from the video's good frames and palm templates from the owner's scans."""
    import cv2

    from kiosk.identity.gallery import build_gallery, samples_from_paths
    from kiosk.memory.open import open_store

    faces = build_gallery(face_embedder, samples_from_paths([data_dir / "face_video" / LIN_VIDEO], video_frames=24))
    palms = palm_embedder.embed_rois([cv2.imread(str(path)) for path in palm_scans(tongji, OWNER, ENROL_SAMPLES)])
    store = open_store(config)
    try:
        user_id = int(store.add_user("Lin").id)
        store.set_templates(user_id, "face", faces.vectors, face_embedder.model_sha256)
        store.set_templates(user_id, "palm", palms, palm_embedder.model_sha256)
    finally:
        store.close()


def test_face_and_palm_clear_a_sensitive_note_that_the_face_alone_does_not(  # type: ignore[no-untyped-def]
    qtbot, palm_config, open_kiosk, text_encoder, data_dir, tongji, face_embedder, palm_embedder, face_tau, palm_tau
) -> None:
    config, scanner = palm_config
    config.capture.face_source = str(data_dir / "face_video" / LIN_VIDEO)
    config.sensitive.verification = "face+palm"
    enrol_face_and_palm(config, face_embedder, palm_embedder, data_dir, tongji)
    add_notes(config, text_encoder, "Lin", [SENSITIVE_NOTE])
    thresholds = {"face": face_tau, "palm": palm_tau}

    scanner.show(OWNER, ASK_SAMPLES)
    llm = scripted_llm()
    window = open_kiosk(config, llm, thresholds)
    result = ask_when(qtbot, window, "Lin", SENSITIVE_QUESTION)
    assert not isinstance(result, str), result
    assert result.decision == "owner" and result.presence.name == "Lin"
    assert any(note.content == SENSITIVE_NOTE for note in result.notes)  # face and palm: cleared
    assert "insulin twice a day" in prompts(llm)

    asked_before = len(llm.calls)
    scanner.show(STRANGER, ASK_SAMPLES)  # Lin's face with someone else's palm
    qtbot.wait(2500)  # the owner's scans leave the palm fusion window (2 s)
    result = ask_when(qtbot, window, "Lin", SENSITIVE_QUESTION)
    assert result.decision == "owner" and not any(note.sensitivity for note in result.notes)
    assert result.withheld_sensitive >= 1 or result.step_up is not None
    assert "insulin twice a day" not in "\n".join(call.text for call in llm.calls[asked_before:])
    window.shutdown()  # idempotent: the fixture's own shutdown at the end is then a no-op

    config.capture.palm_source = None  # the face alone: a terminal without a palm scanner
    face_only_llm = scripted_llm()
    window = open_kiosk(config, face_only_llm, thresholds)
    result = ask_when(qtbot, window, "Lin", SENSITIVE_QUESTION)
    assert result.decision == "owner" and result.presence.name == "Lin"
    assert not any(note.sensitivity for note in result.notes)
    assert result.withheld_sensitive >= 1 or result.step_up is not None
    assert "insulin twice a day" not in prompts(face_only_llm)


def test_face_and_palm_terminal_enrols_both_in_the_wizard(  # type: ignore[no-untyped-def]
    qtbot, palm_config, open_kiosk, data_dir, face_tau, palm_tau, monkeypatch
) -> None:
    config, scanner = palm_config
    # the recording cannot turn its head when asked: waiting for it would only spread the frames over the clip's
    # cutaways (the pause is tested in tests/ui/test_screens.py)
    monkeypatch.setattr("kiosk.ui.screens.enroll.POSE_CHANGE_MS", 0)
    config.capture.face_source = str(data_dir / "face_video" / LIN_VIDEO)
    # the liveness challenge asks for a blink or head turn this looped recording shows only by chance (as in
    # test_real_pipeline's face enrolment)
    config.pad.enabled = False
    scanner.show(OWNER, ENROL_SAMPLES)
    window = open_kiosk(config, scripted_llm(), {"face": face_tau, "palm": palm_tau})
    user = enrol_in_wizard(qtbot, window, "Lin", expect_title="Enrol — look at the camera")
    palms_read = [sample.palm is not None for sample in window.enroll.samples]
    assert user.modalities == ("face", "palm"), f"palm read beside each face sample: {palms_read}"
    assert all(palms_read)
    users = {u.name: u for u in window.ctx.require_services().list_users()}
    assert set(users["Lin"].modalities) == {"face", "palm"}


@pytest.mark.parametrize(
    ("reasons", "said"),
    [(FALLBACK_REASONS, "I could not see anyone"), (PALM_ONLY_FALLBACK_REASONS, "No palm was on the scanner")],
)
def test_a_fallback_with_nobody_verified_speaks_of_the_terminals_biometric(
    qtbot, reasons: dict[str, str], said: str
) -> None:  # type: ignore[no-untyped-def]
    conversation = ConversationView(reasons=reasons)
    qtbot.addWidget(conversation)
    bubble = conversation.add_answer()
    bubble.finish(AnswerView("I don't know.", "fallback", Presence("nobody")))
    assert bubble.fallback_reason.text().startswith(said)
