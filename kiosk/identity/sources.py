"""Frame sources: cameras, video files, image folders and URL streams behind one non-blocking interface.

Every source runs its own daemon thread and keeps only the newest frame, so a slow consumer never makes a
queue grow; it simply sees fewer frames. `latest()` returns immediately. Live sources (cameras, device paths,
URLs) survive being unplugged: they report `reconnecting` and retry with exponential back-off until the
device answers again. Frames pass through as decoded (a grayscale scanner stays 2-D, a 16-bit image stays
16-bit); consumers normalise what they need (see `as_bgr8` for display).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

from kiosk.errors import DataError

if TYPE_CHECKING:
    from kiosk.config import CaptureConfig

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".pnm"})
URL_SCHEMES = ("http://", "https://", "rtsp://", "rtsps://", "rtmp://", "udp://", "tcp://")


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


def _valid_image(image: np.ndarray | None) -> bool:
    return image is not None and image.size > 0 and image.ndim in (2, 3)


class LiveSource(ThreadedSource):
    """A camera (index or device path) or a network stream: reconnects with exponential back-off when lost."""

    def __init__(
        self,
        name: str,
        capture_factory: CaptureFactory,
        *,
        max_backoff_s: float = 5.0,
        initial_backoff_s: float = 0.25,
        read_failures_before_reconnect: int = 5,
    ) -> None:
        super().__init__(name)
        self._factory = capture_factory
        self._max_backoff = max_backoff_s
        self._initial_backoff = min(initial_backoff_s, max_backoff_s)
        self._read_failures_allowed = read_failures_before_reconnect
        self.reconnects = 0  # successful re-opens after a loss, for the UI and tests

    def _open(self) -> Capture | None:
        try:
            capture = self._factory()
        except Exception as exc:  # a driver or backend error is a failed attempt, not a crash
            log.debug("%s: open raised %s", self.name, exc)
            return None
        if not capture.isOpened():
            capture.release()
            return None
        return capture

    def _run(self) -> None:
        backoff = self._initial_backoff
        attempts = 0
        ever_opened = False
        self._set_state(SourceState.STARTING, f"{self.name}: opening")
        while not self._stop.is_set():
            capture = self._open()
            if capture is None:
                attempts += 1
                what = "lost, not back yet" if ever_opened else "not available"
                self._set_state(
                    SourceState.RECONNECTING,
                    f"{self.name}: {what} (attempt {attempts}); retrying in {backoff:.1f} s",
                )
                if self._sleep(backoff):
                    break
                backoff = min(backoff * 2, self._max_backoff)
                continue
            if ever_opened:
                self.reconnects += 1
            ever_opened = True
            frames_before = self._next_index
            try:
                lost = self._read_until_lost(capture)
            finally:
                capture.release()
            if not lost:
                break
            attempts += 1
            if self._next_index > frames_before:
                backoff, attempts = self._initial_backoff, 1
                why = "frames stopped"
            else:  # opens but delivers nothing: keep backing off instead of spinning
                why = "opens but delivers no frames"
            self._set_state(
                SourceState.RECONNECTING, f"{self.name}: {why} (attempt {attempts}); reconnecting in {backoff:.1f} s"
            )
            if self._sleep(backoff):
                break
            backoff = min(backoff * 2, self._max_backoff)
        if self.state != SourceState.FAILED:
            self._set_state(SourceState.ENDED, f"{self.name}: stopped")

    def _read_until_lost(self, capture: Capture) -> bool:
        """Read frames until stopped (False) or until the device stops answering (True)."""
        failures = 0
        while not self._stop.is_set():
            try:
                ok, image = capture.read()
            except Exception as exc:  # some backends raise instead of returning False on unplug
                log.debug("%s: read raised %s", self.name, exc)
                ok, image = False, None
            if ok and image is not None and _valid_image(image):
                failures = 0
                self._publish(image)
                if self.state != SourceState.RUNNING:
                    self._set_state(SourceState.RUNNING, f"{self.name}: receiving frames")
                continue
            failures += 1
            if failures >= self._read_failures_allowed:
                return True
            if self._sleep(0.02):
                break
        return False


class VideoFileSource(ThreadedSource):
    """A video replayed like a camera: paced at its frame rate unless `realtime=False`; looped or once."""

    def __init__(self, path: Path, *, loop: bool = True, realtime: bool = True, speed: float = 1.0) -> None:
        super().__init__(f"video {path.name}")
        if not path.is_file():
            raise DataError(f"video file {path} does not exist", "give an existing video file")
        self.path = path
        self.loop = loop
        self.realtime = realtime
        self.speed = speed
        self.file_fps = 0.0
        self.passes = 0  # completed plays through the file

    def _open(self) -> Capture:
        import cv2

        return cv2.VideoCapture(str(self.path))

    def _run(self) -> None:
        import cv2

        while not self._stop.is_set():
            capture = self._open()
            if not capture.isOpened():
                capture.release()
                self._set_state(SourceState.FAILED, f"{self.name}: cannot be opened as a video")
                return
            fps = capture.get(cv2.CAP_PROP_FPS)
            self.file_fps = fps if 1.0 <= fps <= 240.0 else 30.0
            period = 1.0 / (self.file_fps * self.speed)
            try:
                decoded = self._play(capture, period)
            finally:
                capture.release()
            if self._stop.is_set():
                break
            if decoded == 0:
                self._set_state(SourceState.FAILED, f"{self.name}: no decodable frame in the file")
                return
            self.passes += 1
            if not self.loop:
                self._set_state(SourceState.ENDED, f"{self.name}: end of video ({decoded} frames)")
                return
        if self.state not in (SourceState.FAILED, SourceState.ENDED):
            self._set_state(SourceState.ENDED, f"{self.name}: stopped")

    def _play(self, capture: Capture, period: float) -> int:
        decoded = 0
        due = time.monotonic()
        while not self._stop.is_set():
            ok, image = capture.read()
            if not ok or not _valid_image(image):
                return decoded
            assert image is not None
            if self.realtime:
                delay = due - time.monotonic()
                if delay > 0 and self._sleep(delay):
                    return decoded
                due = max(due + period, time.monotonic() - period)  # resync after a stall instead of bursting
            self._publish(image)
            decoded += 1
            if self.state != SourceState.RUNNING:
                self._set_state(SourceState.RUNNING, f"{self.name}: playing" + (" (looped)" if self.loop else ""))
        return decoded


def list_images(folder: Path) -> list[Path]:
    """Image files directly inside `folder`, sorted by name (hidden files skipped)."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")
    )


def read_image(path: Path) -> np.ndarray | None:
    """Decode an image keeping its form (gray stays 2-D, 16-bit stays 16-bit); None when unreadable."""
    import cv2

    try:
        data = np.fromfile(str(path), dtype=np.uint8)
    except OSError:
        return None
    if data.size == 0:
        return None
    image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    return image if _valid_image(image) else None


class ImageFolderSource(ThreadedSource):
    """Images of a folder in name order, one every `interval_s`: looped, once, or watching for new files.

    `watch=True` suits a vendor SDK that drops scans into a folder: files seen are shown once, new files
    are picked up as they appear, and the source never ends on its own.
    """

    def __init__(
        self,
        folder: Path,
        *,
        loop: bool = True,
        interval_s: float = 0.1,
        watch: bool = False,
        poll_s: float = 0.2,
    ) -> None:
        super().__init__(f"folder {folder.name or folder}")
        if not folder.is_dir():
            raise DataError(f"image folder {folder} does not exist", "give an existing folder of images")
        self.folder = folder
        self.loop = loop and not watch
        self.watch = watch
        self.interval_s = interval_s
        self.poll_s = poll_s
        self.skipped: list[Path] = []  # unreadable files, listed for the UI / logs

    def _run(self) -> None:
        seen: set[Path] = set()
        shown_any = False
        while not self._stop.is_set():
            files = list_images(self.folder)
            pending = [p for p in files if p not in seen] if self.watch else files
            if not files and not self.watch:
                self._set_state(SourceState.FAILED, f"{self.name}: the folder holds no images")
                return
            shown_this_pass = 0
            for path in pending:
                if self._stop.is_set():
                    break
                seen.add(path)
                image = read_image(path)
                if image is None:
                    if path not in self.skipped:
                        self.skipped.append(path)
                        log.warning("%s: skipping unreadable image %s", self.name, path.name)
                    continue
                self._publish(image)
                shown_this_pass += 1
                shown_any = True
                if self.state != SourceState.RUNNING or self.watch:
                    self._set_state(SourceState.RUNNING, f"{self.name}: showing {path.name}")
                if self._sleep(self.interval_s):
                    break
            if self._stop.is_set():
                break
            if self.watch:
                if not pending and shown_any:
                    self._set_state(SourceState.RUNNING, f"{self.name}: waiting for new images")
                elif not shown_any:
                    self._set_state(SourceState.STARTING, f"{self.name}: waiting for images")
                if self._sleep(self.poll_s):
                    break
                continue
            if shown_this_pass == 0:
                self._set_state(SourceState.FAILED, f"{self.name}: none of {len(files)} images could be read")
                return
            if not self.loop:
                self._set_state(SourceState.ENDED, f"{self.name}: shown all {shown_this_pass} images")
                return
        if self.state not in (SourceState.FAILED, SourceState.ENDED):
            self._set_state(SourceState.ENDED, f"{self.name}: stopped")


class StillImageSource(ThreadedSource):
    """One image file shown repeatedly (or once), e.g. a reference photo standing in for a camera."""

    def __init__(self, path: Path, *, loop: bool = True, interval_s: float = 0.1) -> None:
        super().__init__(f"image {path.name}")
        if not path.is_file():
            raise DataError(f"image {path} does not exist", "give an existing image file")
        self.path = path
        self.loop = loop
        self.interval_s = interval_s

    def _run(self) -> None:
        image = read_image(self.path)
        if image is None:
            self._set_state(SourceState.FAILED, f"{self.name}: cannot be decoded as an image")
            return
        while not self._stop.is_set():
            self._publish(image)
            self._set_state(SourceState.RUNNING, f"{self.name}: showing")
            if not self.loop:
                self._set_state(SourceState.ENDED, f"{self.name}: shown once")
                return
            if self._sleep(self.interval_s):
                break
        self._set_state(SourceState.ENDED, f"{self.name}: stopped")


def _opencv_capture(target: int | str) -> CaptureFactory:
    def factory() -> Capture:
        import cv2

        # On Linux ask V4L2 directly: CAP_ANY would also try FFmpeg and Orbbec on every retry and log each.
        is_device = isinstance(target, int) or target.startswith("/dev/")
        if is_device and sys.platform.startswith("linux"):
            return cv2.VideoCapture(target, cv2.CAP_V4L2)
        return cv2.VideoCapture(target)

    return factory


def camera_source(
    target: int | str, *, max_backoff_s: float = 5.0, capture_factory: CaptureFactory | None = None
) -> LiveSource:
    """A camera by index (0, 1, ...) or device path (/dev/video0); a UVC palm scanner is one too."""
    name = f"camera {target}"
    return LiveSource(name, capture_factory or _opencv_capture(target), max_backoff_s=max_backoff_s)


def url_source(url: str, *, max_backoff_s: float = 5.0, capture_factory: CaptureFactory | None = None) -> LiveSource:
    """An HTTP(S)/RTSP stream decoded by OpenCV's FFmpeg backend; reconnects like a camera."""
    shown = url.split("@")[-1] if "@" in url else url  # never log credentials embedded in the URL
    return LiveSource(f"stream {shown}", capture_factory or _opencv_capture(url), max_backoff_s=max_backoff_s)


def open_source(
    spec: str,
    loop: bool = True,
    *,
    max_backoff_s: float = 5.0,
    capture_factory: CaptureFactory | None = None,
    realtime: bool = True,
    folder_interval_s: float = 0.1,
    watch_folder: bool = False,
    start: bool = False,
) -> ThreadedSource:
    """Parse a source spec: digits => camera index, /dev/... => device, http(s)/rtsp => stream,
    a folder => images, an image file => that still image, any other file => video.

    The source is returned unstarted unless `start=True` (call `.start()` or use it as a context manager).
    """
    text = spec.strip()
    if not text:
        raise DataError("empty frame source", "give a camera index, device, video file, image folder or URL")
    source: ThreadedSource
    if text.isdigit():
        source = camera_source(int(text), max_backoff_s=max_backoff_s, capture_factory=capture_factory)
    elif text.startswith("/dev/"):
        source = camera_source(text, max_backoff_s=max_backoff_s, capture_factory=capture_factory)
    elif text.lower().startswith(URL_SCHEMES):
        source = url_source(text, max_backoff_s=max_backoff_s, capture_factory=capture_factory)
    else:
        path = Path(text).expanduser()
        if path.is_dir():
            source = ImageFolderSource(path, loop=loop, interval_s=folder_interval_s, watch=watch_folder)
        elif path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
            source = StillImageSource(path, loop=loop, interval_s=folder_interval_s)
        elif path.is_file():
            source = VideoFileSource(path, loop=loop, realtime=realtime)
        else:
            raise DataError(
                f"frame source '{spec}' is not a camera index, device, folder, file or URL",
                "use e.g. 0, /dev/video0, clip.mp4, a folder of images, or rtsp://host/stream",
            )
    return source.start() if start else source


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


def as_bgr8(image: np.ndarray) -> np.ndarray:
    """A display-ready BGR uint8 copy of any decoded frame (gray, 16-bit, float, BGRA)."""
    import cv2

    out = image
    if out.dtype != np.uint8:
        if out.dtype == np.uint16:
            out = (out >> 8).astype(np.uint8)
        else:
            finite = np.nan_to_num(out.astype(np.float32))
            low, high = float(finite.min()), float(finite.max())
            scale = 255.0 / (high - low) if high > low else 0.0
            out = ((finite - low) * scale).astype(np.uint8)
    if out.ndim == 2:
        return cv2.cvtColor(out, cv2.COLOR_GRAY2BGR)
    if out.shape[2] == 1:
        return cv2.cvtColor(out[:, :, 0], cv2.COLOR_GRAY2BGR)
    if out.shape[2] == 4:
        return cv2.cvtColor(out, cv2.COLOR_BGRA2BGR)
    return out


def configured_source(capture: CaptureConfig, which: Literal["face", "palm"] = "face") -> ThreadedSource | None:
    """The unstarted source for `capture.face_source` / `capture.palm_source`; None when that one is unset."""
    spec = capture.face_source if which == "face" else capture.palm_source
    if spec is None or not spec.strip():
        return None
    return open_source(spec, capture.loop_video, max_backoff_s=capture.reconnect_max_backoff_s)
