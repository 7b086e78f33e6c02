"""What every frame source is: the Frame, its state and status, and the thread that keeps the newest frame.

Every source runs its own daemon thread and keeps only the newest frame, so a slow consumer never makes a
queue grow; it simply sees fewer frames. `latest()` returns immediately.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType
from typing import Protocol, runtime_checkable

import numpy as np

log = logging.getLogger("kiosk.identity.sources")


class SourceState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    RECONNECTING = "reconnecting"
    ENDED = "ended"
    FAILED = "failed"


@dataclass(frozen=True)
class Frame:
    image: np.ndarray  # as decoded: BGR uint8 (H, W, 3) from cameras/videos, folders pass gray/16-bit through
    timestamp: float  # time.time() when the frame was captured (read from the device or file)
    index: int  # 0, 1, 2, ... per source; never reset by loops or reconnects


@dataclass(frozen=True)
class SourceStatus:
    state: SourceState
    message: str  # one human sentence for the UI / logs
    since: float  # time.time() of the last state change
    frames: int  # frames delivered so far
    fps: float  # recent delivery rate (exponential moving average), 0 before two frames


@runtime_checkable
class FrameSource(Protocol):
    """What the verifier, the UI and the palm scanner program against."""

    name: str

    def start(self) -> FrameSource: ...
    def stop(self, timeout: float = 3.0) -> bool: ...
    def latest(self) -> Frame | None: ...
    def wait_for_frame(self, after_index: int = -1, timeout: float = 1.0) -> Frame | None: ...
    @property
    def state(self) -> SourceState: ...
    @property
    def message(self) -> str: ...
    def status(self) -> SourceStatus: ...


class Capture(Protocol):
    """The part of cv2.VideoCapture that sources use; tests inject fakes to simulate unplug/replug."""

    def isOpened(self) -> bool: ...
    def read(self) -> tuple[bool, np.ndarray | None]: ...
    def release(self) -> None: ...
    def get(self, prop_id: int) -> float: ...


CaptureFactory = Callable[[], Capture]


class ThreadedSource:
    """Thread, newest-frame slot and state bookkeeping shared by every source; subclasses write `_run`."""

    name: str

    def __init__(self, name: str) -> None:
        self.name = name
        self._frame: Frame | None = None
        self._next_index = 0
        self._new_frame = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._status = SourceStatus(SourceState.STARTING, f"{name}: not started", time.time(), 0, 0.0)
        self._last_publish: float | None = None

    # ---- consumer side -------------------------------------------------------------------------
    def latest(self) -> Frame | None:
        """The newest frame, or None before the first one; never blocks (a single reference read)."""
        return self._frame

    def wait_for_frame(self, after_index: int = -1, timeout: float = 1.0) -> Frame | None:
        """Wait up to `timeout` s for a frame newer than `after_index`; None on timeout or once ended."""
        deadline = time.monotonic() + timeout
        with self._new_frame:
            while True:
                frame = self._frame
                if frame is not None and frame.index > after_index:
                    return frame
                remaining = deadline - time.monotonic()
                finished = self.state in (SourceState.ENDED, SourceState.FAILED)
                if remaining <= 0 or finished or self._stop.is_set():
                    return None
                self._new_frame.wait(min(remaining, 0.1))

    @property
    def state(self) -> SourceState:
        return self._status.state

    @property
    def message(self) -> str:
        return self._status.message

    def status(self) -> SourceStatus:
        return self._status

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ThreadedSource:
        """Start the capture thread (again, after stop() or an end); a no-op while it runs."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._set_state(SourceState.STARTING, f"{self.name}: starting")
        self._thread = threading.Thread(target=self._guarded_run, name=f"source:{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 3.0) -> bool:
        """Ask the thread to finish and join it; True when it has ended within `timeout` seconds."""
        self._stop.set()
        with self._new_frame:
            self._new_frame.notify_all()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            log.warning("%s: capture thread still running after %.1f s (a device read hangs)", self.name, timeout)
            return False
        return True

    def __enter__(self) -> ThreadedSource:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---- producer side -------------------------------------------------------------------------
    def _guarded_run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # the thread must end with a state a person can read, never silently
            log.exception("%s: capture thread crashed", self.name)
            self._set_state(SourceState.FAILED, f"{self.name}: capture failed ({type(exc).__name__}: {exc})")
        finally:
            with self._new_frame:
                self._new_frame.notify_all()

    def _run(self) -> None:
        raise NotImplementedError

    def _publish(self, image: np.ndarray, timestamp: float | None = None) -> Frame:
        now = time.time() if timestamp is None else timestamp
        frame = Frame(image=image, timestamp=now, index=self._next_index)
        self._next_index += 1
        fps = self._status.fps
        if self._last_publish is not None:
            gap = now - self._last_publish
            if gap > 0:
                fps = 1.0 / gap if fps == 0 else 0.9 * fps + 0.1 / gap
        self._last_publish = now
        with self._new_frame:
            self._frame = frame
            self._new_frame.notify_all()
        status = self._status
        self._status = SourceStatus(status.state, status.message, status.since, frame.index + 1, fps)
        return frame

    def _set_state(self, state: SourceState, message: str) -> None:
        status = self._status
        if status.state == state and status.message == message:
            return
        since = time.time() if status.state != state else status.since
        self._status = SourceStatus(state, message, since, status.frames, status.fps)
        log.info("%s: %s (%s)", self.name, state.value, message)
        with self._new_frame:
            self._new_frame.notify_all()

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; True when the source was asked to stop."""
        return self._stop.wait(max(0.0, seconds))


def valid_image(image: np.ndarray | None) -> bool:
    return image is not None and image.size > 0 and image.ndim in (2, 3)


def iterate_frames(source: FrameSource, timeout: float = 1.0) -> Iterator[Frame]:
    """Yield each new frame the consumer manages to see (newest-only) until the source ends or fails."""
    last = -1
    while True:
        frame = source.wait_for_frame(last, timeout)
        if frame is None:
            if source.state in (SourceState.ENDED, SourceState.FAILED):
                return
            continue
        last = frame.index
        yield frame
