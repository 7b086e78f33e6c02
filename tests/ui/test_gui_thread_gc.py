"""Cyclic garbage is collected on the GUI thread's timer, never by a worker thread's allocation."""

from __future__ import annotations

import gc
import threading
import weakref

from kiosk.ui.gui_thread_gc import GuiThreadGarbageCollector


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_automatic_collection_is_off_and_the_timer_collects_cycles(qapp) -> None:  # type: ignore[no-untyped-def]
    was_enabled = gc.isenabled()
    collector = GuiThreadGarbageCollector(interval_ms=10_000, parent=qapp)
    try:
        assert not gc.isenabled()
        garbage = Cycle()
        alive = weakref.ref(garbage)
        del garbage
        collected_on: list[str] = []

        def allocate_on_a_worker() -> None:
            _ = [Cycle() for _ in range(5 * gc.get_threshold()[0])]
            collected_on.append("worker" if alive() is None else "")

        worker = threading.Thread(target=allocate_on_a_worker)
        worker.start()
        worker.join()
        assert collected_on == [""], "a worker's allocations triggered a collection"
        assert alive() is not None
        assert collector.collect_due() > 0
        assert alive() is None
    finally:
        collector.stop()
    assert gc.isenabled() == was_enabled
