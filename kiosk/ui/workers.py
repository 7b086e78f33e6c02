"""Off-GUI-thread work: one-shot tasks on a thread pool, the answer stream, and the camera analysis loop.

Workers only talk back through signals, so every widget update happens on the GUI thread.
Expected failures (KioskError) become their one-line message; anything else becomes a calm
"unexpected problem" message and a logged traceback, so the app stays up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal

from kiosk.app.views import FrameView, KioskServices, Verification
from kiosk.errors import KioskError

log = logging.getLogger("kiosk.ui")


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, KioskError):
        return exc.one_line()
    log.error("unexpected error in a worker", exc_info=exc)
    return f"Something went wrong ({type(exc).__name__}: {exc}). The kiosk is still running."


class TaskSignals(QObject):
    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str)


class Task(QRunnable):
    """Run `work(progress)` on the pool; emit finished(result) or failed(message)."""

    def __init__(self, work: Callable[[Callable[[float, str], None]], Any]) -> None:
        super().__init__()
        self.work = work
        self.signals = TaskSignals()
        self.setAutoDelete(False)

    def run(self) -> None:
        try:
            result = self.work(self.signals.progress.emit)
        except BaseException as exc:
            self.signals.failed.emit(describe_error(exc))
        else:
            self.signals.finished.emit(result)


_running: set[Task] = set()  # Python owns the signal objects: keep them alive until the task reports


def submit(
    work: Callable[[Callable[[float, str], None]], Any],
    on_done: Callable[[Any], None] | None = None,
    on_error: Callable[[str], None] | None = None,
    on_progress: Callable[[float, str], None] | None = None,
    pool: QThreadPool | None = None,
) -> Task:
    task = Task(work)
    _running.add(task)
    task.signals.finished.connect(lambda _result: _running.discard(task))
    task.signals.failed.connect(lambda _message: _running.discard(task))
    if on_done is not None:
        task.signals.finished.connect(on_done)
    if on_error is not None:
        task.signals.failed.connect(on_error)
    if on_progress is not None:
        task.signals.progress.connect(on_progress)
    (pool or QThreadPool.globalInstance()).start(task)
    return task


class AnswerSignals(QObject):
    verified = Signal(object)  # Verification, before any token
    token = Signal(str)
    finished = Signal(object)  # AnswerView
    failed = Signal(str)


class AnswerTask(QRunnable):
    """Re-verify at send time, then answer with streamed tokens."""

    def __init__(self, services: KioskServices, question: str) -> None:
        super().__init__()
        self.services = services
        self.question = question
        self.signals = AnswerSignals()
        self.verification: Verification | None = None
        self.setAutoDelete(True)

    def run(self) -> None:
        try:
            verification = self.services.verify_now()
            self.verification = verification
            self.signals.verified.emit(verification)
            result = self.services.answer(self.question, verification, self.signals.token.emit)
        except BaseException as exc:
            self.signals.failed.emit(describe_error(exc))
        else:
            self.signals.finished.emit(result)


class AnalysisLoop(QThread):
    """Analyses the newest camera frame continuously and emits it; never blocks the GUI thread."""

    frame = Signal(object)  # FrameView
    problem = Signal(str)

    def __init__(self, services: KioskServices, max_fps: float = 15.0) -> None:
        super().__init__()
        self.services = services
        self.min_period = 1.0 / max_fps
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                view: FrameView = self.services.analyse_latest()
            except BaseException as exc:
                self.problem.emit(describe_error(exc))
                self._stop.wait(0.5)
                continue
            self.frame.emit(view)
            self._stop.wait(max(0.0, self.min_period - (time.monotonic() - started)))

    def stop(self) -> None:
        self._stop.set()
        self.wait(3000)
