"""The kiosk's background enrichment (ui.enrich_notes_when_idle): a daemon thread that enriches pending notes
(kiosk.memory.enrichment) while nobody uses the terminal.

The terminal is idle when no question, typing or remembering has touched it for `idle_after_s` and no one else
holds the shared LLM. The queue asks again between notes and between a note's two LLM steps, so a person waits at
most for the one enrichment call already running (bounded by its token budget).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from kiosk.errors import KioskError
from kiosk.llm.locked import LockedLLM
from kiosk.memory.build import TextEncoding
from kiosk.memory.enrichment import Enricher, EnrichmentQueue, EnrichReport
from kiosk.memory.store import Store

log = logging.getLogger("kiosk.app")

IDLE_AFTER_S = 20.0
"""Quiet time before enrichment starts: a person still at the terminal usually asks again within it."""
POLL_S = 1.0


class IdleEnrichment:
    def __init__(
        self,
        queue: EnrichmentQueue,
        llm: LockedLLM,
        idle_after_s: float = IDLE_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.queue = queue
        self.llm = llm
        self.idle_after_s = idle_after_s
        self.clock = clock
        self._last_activity = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._arrived: deque[int] = deque()  # notes remembered on other threads; the worker alone owns the queue

    @classmethod
    def for_store(cls, store: Store, encoder: TextEncoding, llm: LockedLLM) -> IdleEnrichment:
        return cls(EnrichmentQueue(Enricher(store, encoder, llm)), llm)

    def touch(self) -> None:
        """Someone is using the terminal (a question, typing, a note): enrichment waits."""
        self._last_activity = self.clock()

    def remembered(self, note_id: int | None) -> None:
        self.touch()
        if note_id is not None:
            self._arrived.append(note_id)

    def busy(self) -> bool:
        recent = self.clock() - self._last_activity < self.idle_after_s
        return recent or self.llm.lock.locked()

    def step(self) -> list[EnrichReport]:
        """Enrich pending notes while the terminal stays idle; nothing when it is busy."""
        if self.busy():
            return []
        while self._arrived:
            self.queue.add(self._arrived.popleft())
        reports = self.queue.run(self._someone_came)
        for report in reports:
            log.info("note %d enrichment: %s in %.1f s", report.note_id, report.outcome, report.seconds)
        return reports

    def _someone_came(self) -> bool:
        return self.clock() - self._last_activity < self.idle_after_s or self._stop.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="note-enrichment", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop after the call in progress (before the store closes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.step()
            except KioskError as exc:
                log.warning("note enrichment paused: %s", exc.one_line())
            except Exception:  # a store closed under it or a backend error: the kiosk goes on without it
                log.exception("note enrichment stopped")
                return
