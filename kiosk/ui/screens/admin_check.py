"""The admin screen's liveness check page: runs one challenge on the live camera and shows what to do.

Each poll's `ChallengeView` is handed on unchanged (`polled`); the screen gives it to the core's AdminAccess,
which decides. This page only starts the challenge, polls it, renders prompt and camera, and offers Cancel.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from kiosk.app.views import ChallengeView, FrameView
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import label
from kiosk.ui.widgets.camera import CameraPreview
from kiosk.ui.workers import submit

POLL_MS = 150


class LivenessCheck(QWidget):
    polled = Signal(object)  # ChallengeView: waiting, passed, failed or off
    cancelled = Signal()

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        layout = QVBoxLayout(self)
        self.intro = label("", "muted")
        self.intro.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.prompt = label("", "title")
        self.prompt.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview = CameraPreview()
        self.detail = label("", "muted")
        self.detail.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row = QHBoxLayout()
        row.addStretch(1)
        self.cancel_button = QPushButton("Cancel (counts as a failed attempt)")
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        layout.addWidget(self.intro)
        layout.addWidget(self.prompt)
        layout.addWidget(self.preview, 1)
        layout.addWidget(self.detail)
        layout.addLayout(row)
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._poll)
        self._polling = False
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def start(self, purpose: str, intro: str) -> None:
        self.stop()
        self._running = True
        self.intro.setText(intro)
        self.prompt.setText("Look at the camera")
        self.detail.setText("")
        services = self.ctx.require_services()
        submit(lambda _p: services.start_challenge(purpose), self._started, self._failed, pool=self.ctx.pool)

    def stop(self) -> None:
        self._timer.stop()
        self._running = False

    def cancel(self) -> None:
        if self._running:
            self.stop()
            self.cancelled.emit()

    def on_frame(self, view: FrameView) -> None:
        if self._running:
            self.preview.show_frame(view)

    def show_prompt(self, prompt: str, detail: str) -> None:
        self.prompt.setText(prompt)
        self.detail.setText(detail)

    def _started(self, view: ChallengeView) -> None:
        if not self._running:
            return
        self._deliver(view)
        if self._running:
            self._timer.start()

    def _poll(self) -> None:
        if self._polling or self.ctx.services is None:
            return
        self._polling = True
        services = self.ctx.services
        submit(lambda _p: services.challenge_status(), self._polled, self._failed, pool=self.ctx.pool)

    def _polled(self, view: ChallengeView) -> None:
        self._polling = False
        if self._running:
            self._deliver(view)

    def _deliver(self, view: ChallengeView) -> None:
        if view.status != "waiting":
            self.stop()
        self.polled.emit(view)

    def _failed(self, message: str) -> None:
        self._polling = False
        if self._running:
            self.stop()
            self.polled.emit(ChallengeView("failed", "", f"the camera check failed: {message}"))
