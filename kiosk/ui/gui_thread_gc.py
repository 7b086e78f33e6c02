"""Python's cyclic garbage collection, run only on the GUI thread.

Left automatic, a collection can start on whichever thread happens to allocate: a model-loading or
answer worker. If the garbage then holds a Qt object (a closed window's widgets, a finished task's
signals), its C++ destructor runs on that worker thread and the process crashes (seen in CI: a
segmentation fault "Garbage-collecting" inside a loader thread). Reference counting still frees
everything acyclic at once; only the cycle collector moves to a timer on the GUI thread.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


class GuiThreadGarbageCollector(QObject):
    """Disables automatic collection and collects, by generation thresholds, from a GUI-thread timer."""

    def __init__(self, interval_ms: int = 500, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.collect_due)
        self.was_enabled = gc.isenabled()
        gc.disable()
        self.timer.start()

    def collect_due(self) -> int:
        """Collect the oldest generation whose count passed its threshold; returns the objects freed."""
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > self.thresholds[generation]:
                return gc.collect(generation)
        return 0

    def stop(self) -> None:
        self.timer.stop()
        if self.was_enabled:
            gc.enable()
