"""Event-loop responsiveness: a fast QTimer records the gaps between its ticks on the GUI thread.

On a machine shared by many busy processes, part of each gap is the OS not scheduling the GUI thread at
all. Linux reports that run-queue wait per thread (/proc/thread-self/schedstat), so next to the wall-clock
gap the probe records the gap without it: the time the app itself kept its event loop from running
(its own work, its locks, and the GIL held by its worker threads).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer

SCHEDSTAT = Path("/proc/thread-self/schedstat")


def run_queue_wait_s() -> float | None:
    """Seconds this thread has spent runnable but not running (Linux), or None where unknown."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class LoopGapProbe(QObject):
    """A tick every `interval_ms`; any gap well above it is time the GUI thread could not react."""

    def __init__(self, interval_ms: int = 5) -> None:
        super().__init__()
        self.interval_ms = interval_ms
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._last: float | None = None
        self._last_wait: float | None = None
        self.gaps_ms: list[float] = []
        self.app_gaps_ms: list[float] = []  # gaps minus the OS run-queue wait (Linux only)

    def start(self) -> None:
        self.gaps_ms.clear()
        self.app_gaps_ms.clear()
        self._last = time.perf_counter()
        self._last_wait = run_queue_wait_s()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self._tick()

    def _tick(self) -> None:
        now = time.perf_counter()
        wait = run_queue_wait_s()
        if self._last is not None:
            gap = (now - self._last) * 1000.0
            self.gaps_ms.append(gap)
            if wait is not None and self._last_wait is not None:
                self.app_gaps_ms.append(max(0.0, gap - (wait - self._last_wait) * 1000.0))
        self._last = now
        self._last_wait = wait

    @property
    def max_gap_ms(self) -> float:
        return max(self.gaps_ms, default=0.0)

    @property
    def max_app_gap_ms(self) -> float:
        """Largest gap the app itself caused; the wall-clock gap where the OS does not say."""
        return max(self.app_gaps_ms, default=0.0) if self.app_gaps_ms else self.max_gap_ms

    def figures(self) -> dict[str, float]:
        gaps = np.asarray(self.gaps_ms or [0.0])
        app = np.asarray(self.app_gaps_ms or self.gaps_ms or [0.0])
        return {
            "ticks": float(gaps.size),
            "max_gap_ms": float(gaps.max()),
            "p50_gap_ms": float(np.percentile(gaps, 50)),
            "p99_gap_ms": float(np.percentile(gaps, 99)),
            "gaps_over_100ms": float((gaps > 100).sum()),
            "max_app_gap_ms": float(app.max()),
            "p99_app_gap_ms": float(np.percentile(app, 99)),
            "app_gaps_over_100ms": float((app > 100).sum()),
        }

    def summary(self) -> str:
        return ", ".join(f"{k}={v:.1f}" for k, v in self.figures().items())
