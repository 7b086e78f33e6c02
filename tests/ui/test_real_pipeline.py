"""End to end with the real core: the face video (or a composed image) as the camera, real FaceNet, real
SQLite + sqlite-vec, real MiniLM retrieval. The LLM is the ScriptedLLM double except in the `llm` test.

The scripted LLM only says "Lisbon" when the owner's note about Lisbon is in its prompt, so a personal
answer proves the note passed the biometric gate, and its absence in other tests proves it did not.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest
from doubles import ScriptedLLM
from PySide6.QtCore import Qt

from kiosk.app.views import KioskServices, Progress
from kiosk.calibration.data import link_labelled_subset
from kiosk.config import KioskConfig
from kiosk.identity.challenge import ChallengeTuning
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.ui.app import KioskWindow
from kiosk.ui.screens.enroll import FACE_POSES

from .conftest import SCREENSHOTS, ask_after_badge, save_screenshot, show_loaded

pytestmark = [pytest.mark.real_models, pytest.mark.real_data]

OWNER_NOTES = ["My sister Clara moved to Lisbon last spring.", "I am allergic to peanuts."]
QUESTION = "Where does my sister live?"
PERSONAL_REPLY = "Your sister Clara lives in Lisbon."
NO_MEMORY_REPLY = "I don't know that about you."
# The performer is enrolled from good frames of the video itself (as the kiosk's wizard does): his other
# frames then score 0.73-1.0, above the shipped strict threshold (0.687). Against his studio photo they
# score only 0.56-0.74, which the FAR-1e-4 operating point often rejects. FALLBACK_TAU is used only while
# no shipped face calibration matches the encoder (the two reference photos score 0.18 against each other).
FALLBACK_TAU = 0.45
LIN = "short_hamilton_clip.mp4"


@pytest.fixture(scope="session")
def face_embedder(base_config: KioskConfig):  # type: ignore[no-untyped-def]
    from kiosk.identity.face import load_face_embedder

    return load_face_embedder(base_config)


@pytest.fixture(scope="session")
def face_tau(base_config: KioskConfig, face_embedder) -> float:  # type: ignore[no-untyped-def]
    from kiosk.calibration.active import active_threshold
    from kiosk.errors import CalibrationError

    try:
        return active_threshold(base_config, "face", face_embedder.model_sha256)
    except CalibrationError:
        return FALLBACK_TAU


@pytest.fixture(scope="session")
def video_dir(data_dir: Path) -> Path:
    return data_dir / "face_video"


def two_faces_folder(video_dir: Path, folder: Path) -> Path:
    """An image-folder camera showing both reference people side by side."""
    images = [cv2.imread(str(video_dir / name)) for name in ("lin-manuel-miranda.png", "alex-lacamoire.png")]
    height = 360
    resized = [cv2.resize(i, (int(i.shape[1] * height / i.shape[0]), height)) for i in images]
    folder.mkdir()
    cv2.imwrite(str(folder / "two_people.png"), np.hstack(resized))
    return folder


class Scene:
    """A store with enrolled people and notes, and the kiosk config pointing at a camera."""

    def __init__(self, config: KioskConfig, face_embedder, text_encoder, video_dir: Path) -> None:  # type: ignore[no-untyped-def]
        from kiosk.identity.face import read_image
        from kiosk.memory.build import NoteBuilder
        from kiosk.memory.ingest import remember
        from kiosk.memory.open import open_store

        self.config = config
        self.face = face_embedder
        self.text_encoder = text_encoder
        self.video_dir = video_dir
        self.users: dict[str, int] = {}
        self._read = read_image
        self._store = open_store(config)
        self._builder = NoteBuilder(self._store, text_encoder, config.memory, None)
        self._remember = remember

    def enroll(self, name: str, media: str) -> int:
        """Templates from a reference photo, or (a video) from its good frames, as the kiosk's wizard would."""
        from kiosk.identity.gallery import build_gallery, samples_from_paths

        if media.endswith(".mp4"):
            vectors = build_gallery(self.face, samples_from_paths([self.video_dir / media], video_frames=24)).vectors
        else:
            vectors = self.face.embed_image(self._read(self.video_dir / media))[None, :]
        user = self._store.add_user(name)
        self._store.set_templates(int(user.id), "face", vectors, self.face.model_sha256)
        self.users[name] = int(user.id)
        return int(user.id)

    def add_notes(self, name: str, texts: list[str]) -> None:
        user = self._store.get_user(self.users[name])
        for day, text in enumerate(texts, start=1):
            self._remember(self._builder, user, text, mode="fast", when=datetime(2026, 3, day, tzinfo=UTC))

    def close(self) -> None:
        self._store.close()


@pytest.fixture()
def scene(ui_config: KioskConfig, face_embedder, text_encoder, video_dir: Path) -> Iterator[Scene]:  # type: ignore[no-untyped-def]
    ui_config.capture.face_source = str(video_dir / "short_hamilton_clip.mp4")
    ui_config.ui.verify_timeout_s = 4.0
    made = Scene(ui_config, face_embedder, text_encoder, video_dir)
    yield made
    made.close()


def scripted_llm() -> ScriptedLLM:
    return ScriptedLLM({"Lisbon": PERSONAL_REPLY}, default=NO_MEMORY_REPLY)


@pytest.fixture()
def open_kiosk(qtbot, face_tau: float) -> Iterator:  # type: ignore[no-untyped-def]
    windows: list[KioskWindow] = []

    def open_(scene: Scene, llm: object) -> KioskWindow:
        from kiosk.app.build import load_kiosk

        def loader(progress: Progress) -> KioskServices:
            return load_kiosk(
                scene.config,
                progress,
                llm=llm,  # type: ignore[arg-type]
                thresholds={"face": face_tau},
                text_encoder=scene.text_encoder,
                face=scene.face,
            )

        return show_loaded(qtbot, windows, scene.config, loader)

    yield open_
    for window in windows:
        window.shutdown()


def ask_when(qtbot, window: KioskWindow, badge: str, question: str = QUESTION):  # type: ignore[no-untyped-def]
    return ask_after_badge(qtbot, window, badge, question)


def prompts(llm: ScriptedLLM) -> str:
    return "\n".join(call.text for call in llm.calls)


def test_owner_asks_and_gets_a_personal_answer_with_their_notes(qtbot, scene: Scene, open_kiosk) -> None:  # type: ignore[no-untyped-def]
    scene.enroll("Lin", LIN)
    scene.enroll("Alex", "alex-lacamoire.png")
    scene.add_notes("Lin", OWNER_NOTES)
    llm = scripted_llm()
    window = open_kiosk(scene, llm)
    with qtbot.waitSignal(window.main.remembered, timeout=60_000) as stored:
        result = ask_when(qtbot, window, "Lin")
    assert not isinstance(result, str), result
    assert result.decision == "owner", result
    assert result.presence.name == "Lin"
    assert any("Lisbon" in note.content for note in result.notes)
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "personal"
    assert bubble.body.text() == PERSONAL_REPLY
    assert f"Used {len(result.notes)} of your memories" in bubble.memory_toggle.text()
    assert isinstance(stored.args[0], int)  # the question became Lin's note, in the background
    qtbot.mouseClick(bubble.memory_toggle, Qt.MouseButton.LeftButton)
    save_screenshot(window, "kiosk-main-owner")
    users = window.ctx.require_services().list_users()
    notes = {u.name: u.notes for u in users}
    assert notes == {"Lin": len(OWNER_NOTES) + 1, "Alex": 0}


def test_another_enrolled_person_gets_no_owner_notes(qtbot, scene: Scene, open_kiosk) -> None:  # type: ignore[no-untyped-def]
    scene.enroll("Alex", "alex-lacamoire.png")
    scene.enroll("Lin", LIN)
    scene.add_notes("Alex", OWNER_NOTES)  # the owner of the notes is Alex; the camera shows Lin
    llm = scripted_llm()
    window = open_kiosk(scene, llm)
    result = ask_when(qtbot, window, "Lin")
    assert result.presence.name == "Lin"
    assert not result.notes  # Lin is verified, but his own pool is empty and Alex's never opens
    assert "Lisbon" not in prompts(llm) and "peanuts" not in prompts(llm)
    bubble = window.main.conversation.answers()[-1]
    # the question is about the asker and no note of theirs is about it: "I don't know", the model is not asked
    assert bubble.state == "fallback" and bubble.body.text() == UNKNOWN_ANSWER
    assert "without personal memory" in bubble.header.text()
    save_screenshot(window, "kiosk-fallback-other-person")


def test_unknown_face_gets_the_fallback_and_nothing_is_stored(qtbot, scene: Scene, open_kiosk) -> None:  # type: ignore[no-untyped-def]
    scene.enroll("Alex", "alex-lacamoire.png")
    scene.add_notes("Alex", OWNER_NOTES)
    llm = scripted_llm()
    window = open_kiosk(scene, llm)
    result = ask_when(qtbot, window, "Not recognised")
    assert result.decision == "fallback" and not result.notes
    assert "Lisbon" not in prompts(llm)
    assert window.main.conversation.answers()[-1].state == "fallback"
    save_screenshot(window, "kiosk-fallback-unknown")
    qtbot.wait(300)
    assert {u.name: u.notes for u in window.ctx.require_services().list_users()} == {"Alex": len(OWNER_NOTES)}


def test_two_faces_hide_personal_memory(qtbot, scene: Scene, open_kiosk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    scene.config.capture.face_source = str(two_faces_folder(scene.video_dir, tmp_path / "two"))
    scene.enroll("Lin", LIN)
    scene.add_notes("Lin", OWNER_NOTES)
    llm = scripted_llm()
    window = open_kiosk(scene, llm)
    result = ask_when(qtbot, window, "Two people in view")
    assert result.decision == "hidden-multiple-faces" or (result.decision == "fallback" and not result.notes)
    assert "Lisbon" not in prompts(llm)
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "fallback" and "Two people" in bubble.fallback_reason.text()
    assert len(window.main.preview._view.faces) == 2
    save_screenshot(window, "kiosk-two-people")


def test_enrollment_from_the_live_camera_then_recognised(qtbot, scene: Scene, open_kiosk, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The liveness challenge asks for a random blink or head turn that this looped recording shows only by
    # chance (tests/identity/test_pad_real_data.py checks the challenge on its real head turn): off here.
    scene.config.pad.enabled = False
    # Nor can the recording turn its head when asked: waiting for the turn would only spread the five frames
    # over the clip's cutaways to other faces (the pause itself is tested in tests/ui/test_screens.py).
    monkeypatch.setattr("kiosk.ui.screens.enroll.POSE_CHANGE_MS", 0)
    scene.enroll("Alex", "alex-lacamoire.png")
    window = open_kiosk(scene, scripted_llm())
    enroll = window.enroll
    qtbot.mouseClick(window.main.enroll_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(enroll.agree_button, Qt.MouseButton.LeftButton)
    hints: set[str] = set()

    def captured() -> bool:
        hints.add(enroll.hint.text())
        if len(enroll.samples) == 2 and not (SCREENSHOTS / "enrollment-capture.png").exists():
            save_screenshot(window, "enrollment-capture")
        return enroll.step == "name"

    qtbot.waitUntil(captured, timeout=60_000)
    assert len(enroll.samples) == 5
    assert hints - {"Good — hold still", *FACE_POSES}, hints  # the video gave live quality hints
    for char in "Lin":
        enroll.findChild(type(window.main.keyboard)).press(char)
    with qtbot.waitSignal(enroll.enrolled, timeout=30_000) as blocker:
        qtbot.mouseClick(enroll.save_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0].name == "Lin"
    save_screenshot(window, "enrollment-done")
    users = {u.name: u for u in window.ctx.require_services().list_users()}
    assert users["Lin"].modalities == ("face",)
    window.show_screen("main")
    qtbot.waitUntil(lambda: "Lin" in window.main.badge.text(), timeout=30_000)


def lfw_subset(data_dir: Path, folder: Path, identities: int = 16, per_identity: int = 3) -> Path:
    """A small labelled folder (manifest.csv path,identity) from LFW identities with several images."""
    return link_labelled_subset(data_dir / "lfw3d_frontalized", folder, identities, per_identity)


def test_admin_calibrates_on_a_folder_and_applies_the_threshold(
    qtbot, scene: Scene, open_kiosk, data_dir, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    folder = lfw_subset(data_dir, tmp_path / "lfw-small")
    # PIN only here, stated explicitly: the admin liveness check asks for a random blink or head turn that this
    # looped recording shows only by chance. The check itself is tested below (a still camera cannot unlock) and in
    # tests/ui/test_admin_access.py (scripted) and tests/security/test_admin_access.py (landmark sequences).
    scene.config.security.admin_challenge = "off"
    window = open_kiosk(scene, scripted_llm())
    window.ctx.admin_pin.set_pin("2580")
    window.show_screen("admin")
    admin = window.admin
    admin.gate.pad.type_pin("2580")
    assert admin.unlocked
    admin.calibration_tab.folder.setText(str(folder))
    progress: list[int] = []
    admin.calibration_tab.cal_progress.valueChanged.connect(progress.append)
    with qtbot.waitSignal(admin.calibration_ready, timeout=120_000) as blocker:
        qtbot.mouseClick(admin.calibration_tab.run_button, Qt.MouseButton.LeftButton)
    result = blocker.args[0]
    assert len(set(progress)) >= 3  # the bar moved while images were embedded
    assert result.counts["genuine"] == 16 * 3 and result.counts["impostor"] > 1000
    assert result.genuine.mean() > result.impostor.mean() + 0.3
    assert set(result.thresholds) == {"tau_d", "eer", "far", "strict"}
    save_screenshot(window, "admin-calibration")
    qtbot.mouseClick(admin.calibration_tab.rule_buttons["eer"], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(
        admin.action_done, timeout=30_000, check_params_cb=lambda what: what != "users-listed"
    ) as done:
        qtbot.mouseClick(admin.calibration_tab.apply_button, Qt.MouseButton.LeftButton)
    assert done.args[0] == "calibration-applied", admin.calibration_tab.cal_status.text()
    services = window.ctx.require_services()
    assert services.thresholds["face"] == pytest.approx(result.thresholds["eer"])
    written = list((scene.config.paths.calibration_dir).glob("face-*.json"))
    assert len(written) == 1 and '"rule": "eer"' in written[0].read_text()
    assert [e["action"] for e in window.ctx.audit.entries()][-2:] == ["calibration-done", "calibration-applied"]


@pytest.mark.llm
def test_a_still_picture_at_the_camera_cannot_unlock_the_admin_screen(
    qtbot, scene: Scene, open_kiosk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The real Face Mesh challenge on a frozen frame of the performer: whatever it asks, it is never seen."""
    frames = tmp_path / "still"
    frames.mkdir()
    capture = cv2.VideoCapture(str(scene.video_dir / LIN))
    capture.set(cv2.CAP_PROP_POS_FRAMES, 95)  # the performer facing the camera
    ok, frame = capture.read()
    capture.release()
    assert ok
    cv2.imwrite(str(frames / "still.png"), frame)
    scene.config.capture.face_source = str(frames)
    monkeypatch.setattr("kiosk.identity.pad.CHALLENGE", ChallengeTuning(timeout_s=2.5))
    window = open_kiosk(scene, scripted_llm())
    window.ctx.admin_pin.set_pin("2580")
    window.show_screen("admin")
    admin = window.admin
    admin.gate.pad.type_pin("2580")
    assert admin.stack.currentWidget() is admin.check
    qtbot.waitUntil(lambda: admin.stack.currentWidget() is admin.gate, timeout=30_000)
    assert not admin.unlocked
    message = admin.gate.message.text()
    assert "No live person confirmed" in message and "time is up" in message, message
    assert "no face was seen" not in message  # the face was there (a mesh on every frame), it just never moved
    entries = window.ctx.audit.entries()
    assert [
        (e["action"], e.get("purpose"), e.get("passed")) for e in entries if e["action"] == "liveness-challenge"
    ] == [("liveness-challenge", "unlock", False)]
    assert [e["ok"] for e in entries if e["action"] == "admin-challenge"] == [False]


def test_real_small_llm_streams_a_personal_answer_and_the_ui_stays_responsive(qtbot, scene: Scene, open_kiosk) -> None:  # type: ignore[no-untyped-def]
    from kiosk.llm.factory import create_llm
    from kiosk.ui.latency import LoopGapProbe

    scene.config.llm.model = "smollm2-135m-instruct"
    scene.config.llm.max_answer_tokens = 48
    scene.config.llm.threads = 1  # this CI box is shared: llama.cpp threads spinning on busy cores crawl
    # This test is about streaming. With llama.cpp busy, fewer frames get analysed and the rigid-motion cue once
    # called the performer a flat picture (shape change 0.056 < 0.060, a loaded clean-clone run); PAD on this
    # recording has its own tests (tests/identity/test_pad_real_data.py).
    scene.config.pad.enabled = False
    scene.enroll("Lin", LIN)
    # Not the allergy note: it is a sensitive (health) note, and an answer from one is shown whole, not streamed.
    scene.add_notes("Lin", OWNER_NOTES[:1])
    window = open_kiosk(scene, create_llm(scene.config))
    qtbot.waitUntil(lambda: "Lin" in window.main.badge.text(), timeout=30_000)
    tokens: list[str] = []
    probe = LoopGapProbe()
    window.main.type_with_keyboard(QUESTION)
    with qtbot.waitSignal(window.main.answer_done, timeout=120_000) as blocker:
        probe.start()
        window.main.send()
        window.main._task.signals.token.connect(tokens.append)
    probe.stop()
    result = blocker.args[0]
    assert not isinstance(result, str), result
    assert result.decision == "owner" and result.notes, result
    assert len(tokens) >= 3 and result.text.strip()  # really streamed, token by token
    assert 0 < result.timings_ms["first_token"] < result.timings_ms["total"]  # first words before the end
    assert window.main.conversation.answers()[-1].state == "personal"
    assert probe.max_app_gap_ms < 100, probe.summary()


def test_no_camera_is_shown_and_questions_get_answered_without_memory(qtbot, scene: Scene, open_kiosk) -> None:  # type: ignore[no-untyped-def]
    scene.config.capture.face_source = "/dev/video97"  # a camera that is not plugged in
    scene.config.ui.verify_timeout_s = 1.0
    scene.enroll("Lin", LIN)
    scene.add_notes("Lin", OWNER_NOTES)
    llm = scripted_llm()
    window = open_kiosk(scene, llm)
    qtbot.waitUntil(lambda: "No camera" in window.main.badge.text(), timeout=30_000)
    assert "reconnecting" in (window.main.preview._message or "")
    assert "/dev/video97" in window.main.preview.toolTip()
    result = ask_when(qtbot, window, "No camera")
    assert result.decision == "fallback" and not result.notes
    assert "Lisbon" not in prompts(llm)
    assert "camera was not available" in window.main.conversation.answers()[-1].fallback_reason.text()
    save_screenshot(window, "kiosk-no-camera")
