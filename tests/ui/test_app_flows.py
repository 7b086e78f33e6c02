"""The app's behaviour against scripted services: states, person changes, idle, and every bad-input path."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from PySide6.QtCore import Qt

from kiosk.app.views import KioskServices, NoteView, Presence, Progress
from kiosk.config import KioskConfig
from kiosk.errors import ModelError, StoreError
from kiosk.ui.screens.base import IDLE, MAIN

from .conftest import WindowFactory, save_screenshot
from .fakes import BOB, TWO_PEOPLE, UNKNOWN, FakeServices


def ask(qtbot, window, question: str, timeout: int = 10_000) -> object:  # type: ignore[no-untyped-def]
    main = window.main
    with qtbot.waitSignal(main.answer_done, timeout=timeout) as blocker:
        main.type_with_keyboard(question)
        if main.keyboard is not None:
            qtbot.mouseClick(main.keyboard.enter_key, Qt.MouseButton.LeftButton)
        else:
            main.send()
    return blocker.args[0]


def wait_for_badge(qtbot, window, text: str) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: text in window.main.badge.text(), timeout=5000)


def test_owner_gets_a_personal_answer_and_what_they_say_is_remembered(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Ada")
    assert window.main.keyboard is not None  # kiosk mode types with the on-screen keyboard
    with qtbot.waitSignal(window.main.remembered, timeout=5000):
        result = ask(qtbot, window, "where does my sister live?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "personal"
    assert bubble.body.text() == "Your sister Clara lives in Lisbon."
    assert bubble.memory_toggle.text().endswith("Used 2 of your memories")
    assert not bubble.notes.isVisible()
    qtbot.mouseClick(bubble.memory_toggle, Qt.MouseButton.LeftButton)
    assert bubble.notes.isVisible()
    assert result.decision == "owner"
    assert fake.remembered == [("where does my sister live?", 1)]
    assert "Saved to Ada's memory" in window.main.status.text()
    save_screenshot(window, "fake-kiosk-main")


def test_unknown_face_gets_the_calm_fallback_and_nothing_is_stored(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    fake.presence = UNKNOWN
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Not recognised")
    ask(qtbot, window, "where does my sister live?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "fallback"
    assert "without personal memory" in bubble.header.text()
    assert "not recognised" in bubble.fallback_reason.text()
    assert bubble.memory_toggle.isHidden()
    qtbot.wait(100)
    assert fake.remembered == []


def test_unknown_face_with_public_notes_is_still_told_no_personal_memory_was_used(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    fake.presence = UNKNOWN
    fake.public_notes = [
        NoteView(9, "The library closes at six.", datetime(2026, 1, 1, tzinfo=UTC), 0.6, scope="public")
    ]
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Not recognised")
    ask(qtbot, window, "when does the library close?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "fallback" and "without personal memory" in bubble.header.text()
    assert "not recognised" in bubble.fallback_reason.text()
    assert "1 public notes, shared with everyone" in bubble.fallback_reason.text()


def test_owner_answer_counts_own_and_public_notes_apart(qtbot, make_window, fake) -> None:
    fake.public_notes = [
        NoteView(9, "The library closes at six.", datetime(2026, 1, 1, tzinfo=UTC), 0.6, scope="public")
    ]
    window = make_window(fake)
    ask(qtbot, window, "where does my sister live?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "personal"
    assert "Used 2 of your memories and 1 shared with everyone" in bubble.memory_toggle.text()


def test_two_people_hide_personal_memory(qtbot, make_window, fake) -> None:
    fake.presence = TWO_PEOPLE
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Two people in view")
    result = ask(qtbot, window, "where does my sister live?")
    assert result.decision == "hidden-multiple-faces"
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "fallback" and "Two people" in bubble.fallback_reason.text()
    assert fake.remembered == []


def test_each_question_reverifies_and_a_new_person_clears_the_old_conversation(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Ada")
    ask(qtbot, window, "where does my sister live?")
    ask(qtbot, window, "and her birthday?")
    assert fake.verifications == 2
    assert len(window.main.conversation.answers()) == 2
    # Bob steps in and asks before the preview has settled: the verification at send time decides.
    window.analysis.stop()
    fake.presence = BOB
    ask(qtbot, window, "what do I keep?")
    answers = window.main.conversation.answers()
    assert len(answers) == 1 and answers[0].result.presence == BOB
    assert all("Clara" not in b.body.text() for b in window.main.conversation.bubbles)


def test_the_conversation_disappears_when_someone_else_stands_there(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Ada")
    ask(qtbot, window, "where does my sister live?")
    fake.presence = UNKNOWN
    qtbot.waitUntil(lambda: not window.main.conversation.bubbles, timeout=5000)
    assert window.main.conversation.placeholder.isVisible()


def test_idle_timeout_clears_the_conversation_and_a_touch_wakes(
    qtbot, make_window: WindowFactory, fake: FakeServices, ui_config: KioskConfig
) -> None:
    ui_config.ui.idle_timeout_s = 0.6
    window = make_window(fake)
    ask(qtbot, window, "where does my sister live?")
    fake.presence = Presence("nobody")  # the person walked away; only the idle timer clears now
    qtbot.waitUntil(lambda: window.current == IDLE, timeout=5000)
    assert not window.main.conversation.bubbles
    save_screenshot(window, "fake-idle")
    qtbot.mouseClick(window.idle, Qt.MouseButton.LeftButton)
    assert window.current == MAIN


def test_camera_lost_mid_question_answers_without_memory_and_says_so(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Ada")
    fake.disconnect_when_verifying = True
    result = ask(qtbot, window, "where does my sister live?")
    assert result.decision == "fallback"
    bubble = window.main.conversation.answers()[-1]
    assert "camera was not available" in bubble.fallback_reason.text()
    wait_for_badge(qtbot, window, "No camera")
    fake.disconnect_when_verifying = False
    fake.camera = "live"  # plugged back in
    wait_for_badge(qtbot, window, "Ada")


def test_llm_error_is_shown_and_the_next_question_works(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    fake.llm_error = "the language model crashed (out of memory)"
    message = ask(qtbot, window, "where does my sister live?")
    assert isinstance(message, str) and "out of memory" in message
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "failed" and "out of memory" in bubble.body.text()
    fake.llm_error = None
    assert ask(qtbot, window, "where does my sister live?").decision == "owner"


def test_locked_or_full_database_does_not_lose_the_answer(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Ada")
    fake.remember_error = StoreError("the memory database is locked", "try again in a moment")
    with qtbot.waitSignal(window.main.remembered, timeout=5000) as blocker:
        ask(qtbot, window, "remember that I parked on level 3")
    assert "database is locked" in str(blocker.args[0])
    assert "Not saved to memory" in window.main.status.text()
    assert window.main.conversation.answers()[-1].state == "personal"
    fake.remember_error = OSError(28, "No space left on device")
    with qtbot.waitSignal(window.main.remembered, timeout=5000) as blocker:
        ask(qtbot, window, "remember my locker is 12")
    assert "No space left" in window.main.status.text()


def test_missing_models_show_a_clear_start_screen_and_retry_works(
    qtbot, ui_config: KioskConfig, fake: FakeServices
) -> None:
    from kiosk.ui.app import KioskWindow

    attempts: list[int] = []

    def loader(progress: Progress) -> KioskServices:
        attempts.append(1)
        progress(0.2, "Loading the face model")
        if len(attempts) == 1:
            raise ModelError("model facenet-20180408-pb is missing", "run `kiosk models pull`")
        return fake

    window = KioskWindow(ui_config, loader, desktop=True)
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    with qtbot.waitSignal(window.load_failed, timeout=10_000):
        window.load()
    assert "facenet-20180408-pb is missing" in window.startup.error.text()
    assert "kiosk models pull" in window.startup.error.text()
    assert window.startup.retry_button.isVisible()
    save_screenshot(window, "fake-startup-error")
    with qtbot.waitSignal(window.ready, timeout=10_000):
        qtbot.mouseClick(window.startup.retry_button, Qt.MouseButton.LeftButton)
    assert window.current == MAIN
    window.shutdown()


def test_desktop_mode_is_windowed_without_on_screen_keyboard(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(fake, desktop=True)
    assert window.main.keyboard is None
    assert not window.isFullScreen()
    assert ask(qtbot, window, "where does my sister live?").decision == "owner"
    save_screenshot(window, "fake-desktop-main")


def test_streaming_keeps_the_event_loop_responsive(qtbot, make_window, fake) -> None:
    from kiosk.ui.latency import LoopGapProbe

    fake.tokens = [f"word{i} " for i in range(150)]
    fake.token_delay_s = 0.01
    window = make_window(fake)
    probe = LoopGapProbe()
    window.main.type_with_keyboard("tell me a long story")
    started = time.perf_counter()
    with qtbot.waitSignal(window.main.answer_done, timeout=10_000):
        probe.start()
        window.main.send()
    probe.stop()
    assert time.perf_counter() - started > 1.0  # the answer really streamed for a while
    # Target: no gap over 100 ms. This box is shared by many busy processes, so the assertion uses the gap
    # minus the time the OS kept the GUI thread waiting for a CPU (Linux run-queue wait): what the app
    # itself blocks. bench/bench_ui.py records both figures.
    assert probe.max_app_gap_ms < 100, probe.summary()
    assert probe.max_gap_ms < 2000, probe.summary()  # no freeze at all, even on a loaded machine
    assert window.main.conversation.answers()[-1].body.text().count("word") == 150


def test_first_words_appear_while_the_answer_is_still_being_generated(qtbot, make_window, fake) -> None:
    fake.tokens = [f"word{i} " for i in range(12)]
    fake.token_delay_s = 0.15
    window = make_window(fake)
    finished: list[object] = []
    window.main.answer_done.connect(finished.append)
    window.main.type_with_keyboard("tell me a story")
    window.main.send()
    bubble = window.main.conversation.answers()[-1]
    qtbot.waitUntil(lambda: "word0" in bubble.body.text(), timeout=5_000)
    assert not finished  # painted as soon as it existed, long before the last token
    assert bubble.body.isVisible()
    qtbot.waitUntil(lambda: bool(finished), timeout=10_000)
    assert bubble.body.text().count("word") == 12


def test_a_pause_in_typing_prepares_the_answer_off_the_gui_thread(qtbot, make_window, fake) -> None:
    window = make_window(fake)
    window.main.type_with_keyboard("where does my")
    qtbot.waitUntil(lambda: fake.prepared[-1:] == ["where does my"], timeout=5_000)
    window.main.type_with_keyboard(" sister live?")
    qtbot.waitUntil(lambda: fake.prepared[-1:] == ["where does my sister live?"], timeout=5_000)
    # a completed word is prepared at once, without waiting for a pause (the last one may be sent without
    # any); words typed while a prepare runs are prepared after it, newest text only, never twice
    assert fake.prepared[0] == "where"
    assert fake.prepared == sorted(set(fake.prepared), key=len)
    with qtbot.waitSignal(window.main.answer_done, timeout=10_000) as answered:
        window.main.send()
    assert answered.args[0].decision == "owner"  # sending right away still answers normally
