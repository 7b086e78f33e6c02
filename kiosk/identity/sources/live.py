"""Live sources (cameras, device paths, URL streams): they survive being unplugged, reporting `reconnecting`
and retrying with exponential back-off until the device answers again."""

from __future__ import annotations

import sys

from kiosk.identity.sources.base import Capture, CaptureFactory, SourceState, ThreadedSource, log, valid_image

# Longest wait (seconds) between reconnect attempts to a lost camera or stream.
RECONNECT_MAX_BACKOFF_S = 5.0


class LiveSource(ThreadedSource):
    """A camera (index or device path) or a network stream: reconnects with exponential back-off when lost."""

    def __init__(
        self,
        name: str,
        capture_factory: CaptureFactory,
        *,
        max_backoff_s: float = RECONNECT_MAX_BACKOFF_S,
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
            if ok and image is not None and valid_image(image):
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


def opencv_capture(target: int | str) -> CaptureFactory:
    def factory() -> Capture:
        import cv2

        # On Linux ask V4L2 directly: CAP_ANY would also try FFmpeg and Orbbec on every retry and log each.
        is_device = isinstance(target, int) or target.startswith("/dev/")
        if is_device and sys.platform.startswith("linux"):
            return cv2.VideoCapture(target, cv2.CAP_V4L2)
        return cv2.VideoCapture(target)

    return factory


def camera_source(
    target: int | str, *, max_backoff_s: float = RECONNECT_MAX_BACKOFF_S, capture_factory: CaptureFactory | None = None
) -> LiveSource:
    """A camera by index (0, 1, ...) or device path (/dev/video0); a UVC palm scanner is one too."""
    name = f"camera {target}"
    return LiveSource(name, capture_factory or opencv_capture(target), max_backoff_s=max_backoff_s)


def url_source(
    url: str, *, max_backoff_s: float = RECONNECT_MAX_BACKOFF_S, capture_factory: CaptureFactory | None = None
) -> LiveSource:
    """An HTTP(S)/RTSP stream decoded by OpenCV's FFmpeg backend; reconnects like a camera."""
    shown = url.split("@")[-1] if "@" in url else url  # never log credentials embedded in the URL
    return LiveSource(f"stream {shown}", capture_factory or opencv_capture(url), max_backoff_s=max_backoff_s)
