"""The own-memory screen's privacy choice: the person marks a note sensitive (of a kind) or not, re-verified."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox

from kiosk.ui.screens.base import MEMORY

from .conftest import save_screenshot
from .fakes import UNKNOWN


def _open(qtbot, make_window, fake):  # type: ignore[no-untyped-def]
    window = make_window(fake)
    with qtbot.waitSignal(window.memory.changed, timeout=5000):
        window.show_screen(MEMORY)
    return window.memory


def _choose(qtbot, memory, note_id: int, text: str) -> str:  # type: ignore[no-untyped-def]
    choice = memory.findChild(QComboBox, f"sensitivity-{note_id}")
    index = choice.findText(text)
    assert index >= 0, text
    choice.setCurrentIndex(index)
    with qtbot.waitSignal(memory.changed, timeout=5000) as blocker:
        choice.activated.emit(index)  # what a tap on the item sends
    return str(blocker.args[0])


def test_a_note_is_marked_sensitive_and_unmarked_from_the_memory_screen(qtbot, make_window, fake) -> None:
    memory = _open(qtbot, make_window, fake)
    choice = memory.findChild(QComboBox, "sensitivity-1")
    assert choice.currentText() == "Not sensitive"
    assert _choose(qtbot, memory, 1, "Sensitive: address or whereabouts") == "marked"
    assert fake.marked == [(1, "location")] and "Marked" in memory.status.text()
    assert memory.findChild(QComboBox, "sensitivity-1").currentText() == "Sensitive: address or whereabouts"
    assert memory.findChild(QComboBox, "sensitivity-2").currentText() == "Not sensitive"
    save_screenshot(memory.window(), "fake-memory-marked")
    assert _choose(qtbot, memory, 1, "Not sensitive") == "marked"
    assert fake.marked == [(1, "location"), (1, None)]
    assert [n.sensitivity for n in fake.notes[1]] == [None, None]


def test_marking_after_the_person_changed_is_refused(qtbot, make_window, fake) -> None:
    memory = _open(qtbot, make_window, fake)
    fake.presence = UNKNOWN
    assert _choose(qtbot, memory, 2, "Sensitive: health") == "failed"
    assert fake.marked == [] and "changed" in memory.status.text()
