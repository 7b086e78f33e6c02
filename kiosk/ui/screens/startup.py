"""Start-up: progress while models load off the GUI thread, or a plain explanation when they cannot."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QProgressBar, QPushButton, QVBoxLayout

from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import Screen, label


class StartupScreen(Screen):
    retry = Signal()

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        outer = QVBoxLayout(self)
        outer.addStretch(2)
        card = QFrame()
        card.setProperty("role", "card")
        card.setFixedWidth(640 if ctx.desktop else 860)
        column = QVBoxLayout(card)
        column.setContentsMargins(48, 40, 48, 40)
        column.setSpacing(18)
        self.title = label("Bio-Memory Kiosk", "title")
        self.subtitle = label("An assistant that remembers you — and only you.", "muted")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.status = label("Getting ready…", "muted")
        self.error = label("", "error")
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        self.retry_button = QPushButton("Try again")
        self.retry_button.setProperty("role", "primary")
        self.retry_button.clicked.connect(self.retry.emit)
        self.retry_button.hide()
        for widget in (self.title, self.subtitle, self.progress, self.status, self.error, self.retry_button):
            column.addWidget(widget)
        centred = QHBoxLayout()  # stretches, not an alignment flag: wrapped text keeps its height-for-width
        centred.addStretch(1)
        centred.addWidget(card)
        centred.addStretch(1)
        outer.addLayout(centred)
        outer.addStretch(3)

    def show_progress(self, fraction: float, message: str) -> None:
        self.error.hide()
        self.retry_button.hide()
        self.progress.show()
        self.progress.setValue(int(max(0.0, min(1.0, fraction)) * 1000))
        self.status.setText(message)

    def show_error(self, message: str) -> None:
        self.progress.hide()
        self.title.setText("The kiosk cannot start yet")
        self.status.setText("Here is what is missing, and what to do:")
        self.error.setText(message)
        self.error.show()
        self.retry_button.show()

    def reset(self) -> None:
        self.title.setText("Bio-Memory Kiosk")
        self.show_progress(0.0, "Getting ready…")
