"""Screens ask the window to navigate by name and receive every analysed frame while visible."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QWidget

from kiosk.app.views import FrameView
from kiosk.ui.context import AppContext

MAIN, IDLE, ENROLL, MEMORY, ADMIN, STARTUP = "main", "idle", "enroll", "memory", "admin", "startup"


class Screen(QWidget):
    navigate = Signal(str)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx

    def on_enter(self) -> None:
        """Called each time the screen becomes visible."""

    def on_leave(self) -> None:
        """Called when another screen replaces this one."""

    def on_frame(self, view: FrameView) -> None:
        """Every analysed camera frame while this screen is visible."""


def label(text: str, role: str | None = None, wrap: bool = True) -> QLabel:
    widget = QLabel(text)
    widget.setWordWrap(wrap)
    if role:
        widget.setProperty("role", role)
    return widget
