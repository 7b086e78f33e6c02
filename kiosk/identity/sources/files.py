"""File sources replayed like a camera: a video file, a folder of images (or one a scanner SDK writes to), one
still image. Frames pass through as decoded (a grayscale scan stays 2-D, a 16-bit image stays 16-bit)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from kiosk.errors import DataError
from kiosk.identity.image_files import ImageTooLarge, read_image_file
from kiosk.identity.sources.base import Capture, SourceState, ThreadedSource, log, valid_image

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".pnm"})


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
            if not ok or not valid_image(image):
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
    """Decode an image keeping its form (gray stays 2-D, 16-bit stays 16-bit); None when unreadable or too large."""
    try:
        image = read_image_file(path)
    except ImageTooLarge as exc:
        log.warning("%s", exc.one_line())
        return None
    return image if valid_image(image) else None


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
