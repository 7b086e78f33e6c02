"""The idle screen: a calm invitation; any touch wakes the kiosk."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QVBoxLayout

from kiosk.app.views import FrameView
from kiosk.local_time import local_now, zone_named
from kiosk.ui import theme
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import MAIN, Screen, label


class IdleScreen(Screen):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self._zone = zone_named(ctx.config.ui.time_zone)
        column = QVBoxLayout(self)
        column.addStretch(2)
        self.clock = label("", wrap=False)
        self.clock.setStyleSheet(f"font-size: {ctx.metrics.title_px * 3}px; font-weight: 300;")
        self.date = label("", "muted", wrap=False)
        invite = label("Touch the screen to start", "title", wrap=False)
        invite.setStyleSheet(f"color: {theme.ACCENT}; font-size: {ctx.metrics.title_px}px; font-weight: 600;")
        note = label(
            "I recognise you by your face each time you ask, and I only bring back your own memories.", "muted"
        )
        for widget in (self.clock, self.date, invite, note):
            widget.setAlignment(Qt.AlignmentFlag.AlignCenter)
            column.addWidget(widget)
        column.addStretch(3)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._timer.start(1000)
        self._tick()

    def _tick(self) -> None:
        now = local_now(self._zone)
        self.clock.setText(now.strftime("%H:%M"))
        self.date.setText(now.strftime("%A %d %B"))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.navigate.emit(MAIN)

    def on_frame(self, view: FrameView) -> None:
        if view.presence.state == "recognised":
            self.navigate.emit(MAIN)
