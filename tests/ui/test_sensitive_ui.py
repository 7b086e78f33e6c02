"""Sensitive memories on screen: covered until tapped in kiosk mode, marked everywhere, withheld ones said."""

from __future__ import annotations

from datetime import UTC, datetime

from PySide6.QtCore import Qt

from kiosk.app.views import NoteView

from .conftest import WindowFactory, save_screenshot
from .fakes import FakeServices
from .test_app_flows import ask, wait_for_badge

DIAGNOSIS = "My doctor says the thyroid nodule is benign."


def with_sensitive_note(fake: FakeServices) -> FakeServices:
    fake.notes[1] = [
        NoteView(1, "My sister Clara lives in Lisbon.", datetime(2026, 5, 1, tzinfo=UTC), 0.71),
        NoteView(4, DIAGNOSIS, datetime(2026, 6, 2, tzinfo=UTC), 0.69, sensitivity="health"),
    ]
    return fake


def test_kiosk_covers_a_sensitive_answer_and_note_until_tapped(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(with_sensitive_note(fake))
    wait_for_badge(qtbot, window, "Ada")
    ask(qtbot, window, "what did my doctor say?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.state == "personal"
    answer_cover, note_cover = bubble.reveal_buttons
    assert not bubble.body.isVisible() and answer_cover.isVisible()
    assert "sensitive memory (health)" in answer_cover.text()
    qtbot.mouseClick(bubble.memory_toggle, Qt.MouseButton.LeftButton)
    assert note_cover.isVisible() and not note_cover.revealed.isVisible()
    assert DIAGNOSIS not in note_cover.text()
    save_screenshot(window, "fake-kiosk-sensitive-covered")
    qtbot.mouseClick(answer_cover, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(note_cover, Qt.MouseButton.LeftButton)
    assert bubble.body.isVisible() and not answer_cover.isVisible()
    assert note_cover.revealed.isVisible() and DIAGNOSIS in note_cover.revealed.text()


def test_desktop_shows_sensitive_memories_marked_not_covered(
    qtbot, make_window: WindowFactory, fake: FakeServices
) -> None:
    window = make_window(with_sensitive_note(fake), desktop=True)
    ask(qtbot, window, "what did my doctor say?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.reveal_buttons == [] and bubble.body.isVisible()
    qtbot.mouseClick(bubble.memory_toggle, Qt.MouseButton.LeftButton)
    rows = [bubble.notes_layout.itemAt(i).widget().text() for i in range(bubble.notes_layout.count())]
    assert any(text.startswith("•  ◆ Sensitive (health): " + DIAGNOSIS) for text in rows)


def test_withheld_sensitive_memories_are_mentioned(qtbot, make_window: WindowFactory, fake: FakeServices) -> None:
    fake.withheld_sensitive = 2
    window = make_window(fake)
    wait_for_badge(qtbot, window, "Ada")
    ask(qtbot, window, "where does my sister live?")
    bubble = window.main.conversation.answers()[-1]
    assert bubble.withheld.isVisible()
    assert "2 sensitive memories were held back" in bubble.withheld.text()


def test_memory_screen_marks_and_covers_sensitive_notes(qtbot, make_window: WindowFactory, fake: FakeServices) -> None:
    window = make_window(with_sensitive_note(fake))
    wait_for_badge(qtbot, window, "Ada")
    memory = window.memory
    with qtbot.waitSignal(memory.changed, timeout=5000):
        qtbot.mouseClick(window.main.memory_button, Qt.MouseButton.LeftButton)
    mark = memory.findChild(type(memory.status), "sensitive-4")
    assert mark is not None and "Sensitive (health)" in mark.text()
    assert memory.findChild(type(memory.status), "sensitive-1") is None
    cover = memory.reveal_buttons[4]
    qtbot.waitUntil(cover.isVisible, timeout=2000)  # rows are shown by their layout on the next event loop turn
    assert not cover.revealed.isVisible()
    save_screenshot(window, "fake-memory-sensitive")
    qtbot.mouseClick(cover, Qt.MouseButton.LeftButton)
    assert cover.revealed.isVisible() and cover.revealed.text() == DIAGNOSIS
