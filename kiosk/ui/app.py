"""The window: start-up while the core loads off the GUI thread, then screens, the camera loop and the idle timer."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QApplication, QMainWindow, QStackedWidget

from kiosk.app.views import FrameView, KioskServices, Progress, ServicesLoader
from kiosk.config import KioskConfig
from kiosk.errors import KioskError
from kiosk.ui import theme
from kiosk.ui.context import AppContext
from kiosk.ui.gui_thread_gc import GuiThreadGarbageCollector
from kiosk.ui.screens.admin import AdminScreen
from kiosk.ui.screens.base import ADMIN, ENROLL, IDLE, MAIN, MEMORY, STARTUP, Screen
from kiosk.ui.screens.enroll import EnrollScreen
from kiosk.ui.screens.idle import IdleScreen
from kiosk.ui.screens.main import MainScreen
from kiosk.ui.screens.memory import MemoryScreen
from kiosk.ui.screens.startup import StartupScreen
from kiosk.ui.workers import AnalysisLoop, submit

log = logging.getLogger("kiosk.ui")

INPUT_EVENTS = {
    QEvent.Type.MouseButtonPress,
    QEvent.Type.KeyPress,
    QEvent.Type.TouchBegin,
    QEvent.Type.Wheel,
}


class KioskWindow(QMainWindow):
    ready = Signal()  # services loaded, main screen shown
    load_failed = Signal(str)

    def __init__(self, config: KioskConfig, loader: ServicesLoader, desktop: bool) -> None:
        super().__init__()
        self.loader = loader
        metrics = theme.DESKTOP if desktop else theme.KIOSK
        self.ctx = AppContext.create(config, metrics, desktop)
        self.setWindowTitle("Bio-Memory Kiosk")
        self.setStyleSheet(theme.stylesheet(metrics))
        self.stack = QStackedWidget()
        self.setCentralWidget(self.stack)
        self.startup = StartupScreen(self.ctx)
        self.main = MainScreen(self.ctx)
        self.idle = IdleScreen(self.ctx)
        self.enroll = EnrollScreen(self.ctx)
        self.memory = MemoryScreen(self.ctx)
        self.admin = AdminScreen(self.ctx)
        self.screens: dict[str, Screen] = {
            STARTUP: self.startup,
            MAIN: self.main,
            IDLE: self.idle,
            ENROLL: self.enroll,
            MEMORY: self.memory,
            ADMIN: self.admin,
        }
        for screen in self.screens.values():
            self.stack.addWidget(screen)
            screen.navigate.connect(self.show_screen)
        self.startup.retry.connect(self.load)
        # After "forget me", nothing of that person may stay on screen.
        self.memory.changed.connect(lambda what: self.main.clear_conversation() if what == "forgotten" else None)
        self.analysis: AnalysisLoop | None = None
        self.idle_timer = QTimer(self)
        self.idle_timer.setSingleShot(True)
        self.idle_timer.setInterval(int(config.ui.idle_timeout_s * 1000))
        self.idle_timer.timeout.connect(self.go_idle)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)
        self.current = STARTUP
        self.stack.setCurrentWidget(self.startup)

    # --- loading ------------------------------------------------------------------------------------
    def load(self) -> None:
        self.startup.reset()
        self.show_screen(STARTUP)
        loader = self.loader
        submit(
            lambda progress: loader(progress),
            self._loaded,
            self._load_failed,
            self.startup.show_progress,
            pool=self.ctx.pool,
        )

    def _loaded(self, services: KioskServices) -> None:
        self.ctx.services = services
        self.analysis = AnalysisLoop(services)
        self.analysis.frame.connect(self._on_frame)
        self.analysis.problem.connect(self.main.show_camera_problem)
        self.analysis.start()
        self.show_screen(MAIN)
        self.ready.emit()

    def _load_failed(self, message: str) -> None:
        self.startup.show_error(message)
        self.load_failed.emit(message)

    # --- screens ------------------------------------------------------------------------------------
    def show_screen(self, name: str) -> None:
        if name != STARTUP and self.ctx.services is None:
            return
        previous = self.screens[self.current]
        if previous is not self.screens[name]:
            previous.on_leave()
        self.current = name
        screen = self.screens[name]
        self.stack.setCurrentWidget(screen)
        screen.on_enter()
        if name in (STARTUP, IDLE):
            self.idle_timer.stop()
        else:
            self.idle_timer.start()

    def go_idle(self) -> None:
        """Inactivity: nobody's conversation stays on screen, admin locks, the idle screen shows."""
        if self.main.busy():
            self.idle_timer.start()
            return
        self.main.clear_conversation()
        self.show_screen(IDLE)

    def _on_frame(self, view: FrameView) -> None:
        self.screens[self.current].on_frame(view)
        if self.current != MAIN:
            self.main._track_person(view.presence)  # the conversation follows the person even off-screen

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in INPUT_EVENTS and self.idle_timer.isActive():
            self.idle_timer.start()
        return False

    # --- shutdown -----------------------------------------------------------------------------------
    def shutdown(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        self.idle_timer.stop()
        if self.analysis is not None:
            self.analysis.stop()
            self.analysis = None
        self.ctx.pool.waitForDone(10_000)
        if self.ctx.services is not None:
            try:
                self.ctx.services.close()
            except Exception:
                log.exception("closing services")
            self.ctx.services = None

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)


def _real_loader(config: KioskConfig) -> Callable[[Progress], KioskServices]:
    def load(progress: Progress) -> KioskServices:
        from kiosk.app.build import load_kiosk

        return load_kiosk(config, progress)

    return load


def run(load_config: Callable[[], KioskConfig], desktop: bool, exit_after_s: float | None = None) -> int:
    """Start the app; returns the process exit code. Problems are shown on screen, never as a traceback.

    `load_config`: the caller's settings (a KioskError is printed as one line, exit code 2).
    `exit_after_s`: smoke mode (kiosk.ui.smoke) — run that long once ready, print a status line, exit.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("Bio-Memory Kiosk")
    GuiThreadGarbageCollector(parent=app)
    try:
        config = load_config()
    except KioskError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    window = KioskWindow(config, _real_loader(config), desktop)
    if desktop or not config.ui.fullscreen:
        window.resize(1280, 800)
        window.show()
    else:
        window.setWindowFlag(Qt.WindowType.FramelessWindowHint, True)
        window.showFullScreen()
    if exit_after_s is not None:
        from kiosk.ui.smoke import SmokeRun

        smoke = SmokeRun(window, exit_after_s)  # noqa: F841  (kept alive until exec returns)
    window.load()
    app.aboutToQuit.connect(window.shutdown)
    return int(app.exec())
