"""Frame sources: cameras, video files, image folders and URL streams behind one non-blocking interface.

Every source runs its own daemon thread and keeps only the newest frame (kiosk.identity.sources.base). Live
sources (cameras, device paths, URLs) survive being unplugged and reconnect with back-off (.live); files replay
like a camera (.files). Frames pass through as decoded (a grayscale scanner stays 2-D, a 16-bit image stays
16-bit); consumers normalise what they need (see `as_bgr8` for display). `open_source` turns a setting's text
into the right source.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from kiosk.errors import DataError
from kiosk.identity.sources.base import (
    Capture,
    CaptureFactory,
    Frame,
    FrameSource,
    SourceState,
    SourceStatus,
    ThreadedSource,
    iterate_frames,
)
from kiosk.identity.sources.files import (
    IMAGE_SUFFIXES,
    ImageFolderSource,
    StillImageSource,
    VideoFileSource,
    list_images,
    read_image,
)
from kiosk.identity.sources.live import RECONNECT_MAX_BACKOFF_S, LiveSource, camera_source, url_source

if TYPE_CHECKING:
    from kiosk.config import CaptureConfig

__all__ = [
    "IMAGE_SUFFIXES",
    "RECONNECT_MAX_BACKOFF_S",
    "URL_SCHEMES",
    "Capture",
    "CaptureFactory",
    "Frame",
    "FrameSource",
    "ImageFolderSource",
    "LiveSource",
    "SourceState",
    "SourceStatus",
    "StillImageSource",
    "ThreadedSource",
    "VideoFileSource",
    "as_bgr8",
    "camera_source",
    "configured_source",
    "iterate_frames",
    "list_images",
    "open_source",
    "read_image",
    "url_source",
]

URL_SCHEMES = ("http://", "https://", "rtsp://", "rtsps://", "rtmp://", "udp://", "tcp://")


def open_source(
    spec: str,
    loop: bool = True,
    *,
    max_backoff_s: float = RECONNECT_MAX_BACKOFF_S,
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
    return open_source(spec)
