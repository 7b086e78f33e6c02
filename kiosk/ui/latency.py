"""Event-loop responsiveness: a fast QTimer records the gaps between its ticks on the GUI thread."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer


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
        self.gaps_ms: list[float] = []

    def start(self) -> None:
        self.gaps_ms.clear()
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self._tick()

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._last is not None:
            self.gaps_ms.append((now - self._last) * 1000.0)
        self._last = now

    @property
    def max_gap_ms(self) -> float:
        return max(self.gaps_ms, default=0.0)

    def figures(self) -> dict[str, float]:
        gaps = np.asarray(self.gaps_ms or [0.0])
        return {
            "ticks": float(gaps.size),
            "max_gap_ms": float(gaps.max()),
            "p50_gap_ms": float(np.percentile(gaps, 50)),
            "p99_gap_ms": float(np.percentile(gaps, 99)),
            "gaps_over_50ms": float((gaps > 50).sum()),
            "gaps_over_100ms": float((gaps > 100).sum()),
        }

    def summary(self) -> str:
        return ", ".join(f"{k}={v:.1f}" for k, v in self.figures().items())
