"""Smoke mode (`kiosk --exit-after SECONDS`): run the real app for a while, print one status line, exit.

Used by the bundle test and the cold-start benchmark, and by a technician checking a terminal from a shell.
The line goes to stdout; start-up failures print the start-up screen's error text and exit non-zero.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

from kiosk.app.views import FrameView

if TYPE_CHECKING:
    from kiosk.ui.app import KioskWindow

STARTUP_LIMIT_S = 600.0
"""A start-up that has not finished by then is reported as a failure instead of hanging the caller."""


def seconds_since_process_start() -> float:
    """Wall time since the kernel started this process (so the interpreter's own start-up is counted too)."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as uptime:
            since_boot = float(uptime.read().split()[0])
        return since_boot - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED_AT


_IMPORTED_AT = time.monotonic()


@dataclass
class SmokeCounts:
    frames: int = 0  # analysed camera frames that carried an image
    frames_with_face: int = 0
    first_frame_s: float | None = None
    identity: str = "none"
    camera: str = "starting"

    def add(self, view: FrameView) -> None:
        if view.image is None:
            self.camera = view.camera
            return
        self.frames += 1
        if self.first_frame_s is None:
            self.first_frame_s = seconds_since_process_start()
        if view.faces:
            self.frames_with_face += 1
        self.identity = view.presence.state
        self.camera = view.camera


class SmokeRun(QObject):
    """Watches a KioskWindow: counts analysed frames once ready, then quits the app with a status line."""

    def __init__(self, window: KioskWindow, run_for_s: float) -> None:
        super().__init__()
        self.window = window
        self.run_for_s = run_for_s
        self.counts = SmokeCounts()
        self.ready_s: float | None = None
        window.ready.connect(self._ready)
        window.load_failed.connect(self._failed)
        self.limit = QTimer(self)
        self.limit.setSingleShot(True)
        self.limit.timeout.connect(lambda: self._failed(f"start-up did not finish within {STARTUP_LIMIT_S:.0f} s"))
        self.limit.start(int(STARTUP_LIMIT_S * 1000))

    def _ready(self) -> None:
        self.limit.stop()
        self.ready_s = seconds_since_process_start()
        if self.window.analysis is not None:
            self.window.analysis.frame.connect(self.counts.add)
        QTimer.singleShot(int(self.run_for_s * 1000), self._finish)

    def _finish(self) -> None:
        counts = self.counts
        first = f"{counts.first_frame_s:.1f} s" if counts.first_frame_s is not None else "never"
        print(
            f"kiosk: ready in {self.ready_s or 0.0:.1f} s, ran {self.run_for_s:g} s: camera frames={counts.frames}, "
            f"faces seen={counts.frames_with_face}, first frame at {first}, camera={counts.camera}, "
            f"identity={counts.identity}",
            flush=True,
        )
        QApplication.exit(0)

    def _failed(self, message: str) -> None:
        self.limit.stop()
        print(f"kiosk: start-up failed: {message}", flush=True)
        QApplication.exit(1)
