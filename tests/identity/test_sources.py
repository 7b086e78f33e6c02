"""Frame sources: real video and image folders, and a fake camera that is unplugged and plugged back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from polling import wait_until

from kiosk.errors import DataError
from kiosk.identity.sources import (
    Frame,
    FrameSource,
    ImageFolderSource,
    LiveSource,
    SourceState,
    StillImageSource,
    VideoFileSource,
    as_bgr8,
    iterate_frames,
    open_source,
)

VIDEO_FRAMES = 275  # short_hamilton_clip.mp4, see ../shared/data/README.md


@pytest.fixture()
def video_path(data_dir: Path) -> Path:
    return data_dir / "face_video" / "short_hamilton_clip.mp4"


class FakeDevice:
    """A camera that can be unplugged and plugged back; counts open attempts and frames produced."""

    def __init__(self, *, gray: bool = False, frame_delay_s: float = 0.005) -> None:
        self.plugged = True
        self.gray = gray
        self.frame_delay_s = frame_delay_s
        self.produced = 0
        self.open_attempts: list[float] = []
        self.hang = threading.Event()  # set => read() blocks until released
        self.release_hang = threading.Event()

    def factory(self) -> FakeCapture:
        self.open_attempts.append(time.monotonic())
        return FakeCapture(self)


class FakeCapture:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.opened = device.plugged

    def isOpened(self) -> bool:
        return self.opened

    def read(self) -> tuple[bool, np.ndarray | None]:
        if self.device.hang.is_set():
            self.device.release_hang.wait(10)
        time.sleep(self.device.frame_delay_s)
        if not (self.opened and self.device.plugged):
            return False, None
        shape = (48, 64) if self.device.gray else (48, 64, 3)
        image = np.full(shape, self.device.produced % 256, dtype=np.uint8)
        self.device.produced += 1
        return True, image

    def release(self) -> None:
        self.opened = False

    def get(self, prop_id: int) -> float:
        return 0.0


def fake_camera(device: FakeDevice, max_backoff_s: float = 0.2, initial_backoff_s: float = 0.05) -> LiveSource:
    return LiveSource(
        "camera fake",
        device.factory,
        max_backoff_s=max_backoff_s,
        initial_backoff_s=initial_backoff_s,
        read_failures_before_reconnect=3,
    )


# ---- video file ---------------------------------------------------------------------------------------


@pytest.mark.real_data
def test_video_once_delivers_every_frame_then_ends(video_path: Path) -> None:
    source = VideoFileSource(video_path, loop=False, realtime=False)
    with source:
        assert wait_until(lambda: source.state == SourceState.ENDED, 20)
        seen_last = source.latest()
    assert source.status().frames == VIDEO_FRAMES
    assert f"{VIDEO_FRAMES} frames" in source.message
    assert seen_last is not None and seen_last.index == VIDEO_FRAMES - 1
    assert seen_last.image.shape == (360, 640, 3) and seen_last.image.dtype == np.uint8
    assert not source.running


@pytest.mark.real_data
def test_video_loops_and_stop_joins_the_thread(video_path: Path) -> None:
    source = VideoFileSource(video_path, loop=True, realtime=False).start()
    assert wait_until(lambda: source.passes >= 2, 30)
    frame = source.latest()
    assert frame is not None and frame.index >= VIDEO_FRAMES  # indices keep counting across loops
    assert source.state == SourceState.RUNNING
    assert source.stop(timeout=3.0)
    assert not source.running
    assert source.state == SourceState.ENDED


@pytest.mark.real_data
def test_video_is_paced_like_a_camera(video_path: Path) -> None:
    with VideoFileSource(video_path, loop=True, realtime=True) as source:
        assert wait_until(lambda: source.latest() is not None, 5)
        first = source.latest()
        time.sleep(1.0)
        last = source.latest()
    assert first is not None and last is not None
    delivered = last.index - first.index
    # 29.97 fps file: about 30 frames per second, never the decoder's full speed (hundreds of fps here);
    # a loaded machine may deliver fewer, never more
    assert 5 <= delivered <= 40
    assert last.timestamp - first.timestamp >= (delivered - 1) / 29.97 - 0.02


def test_corrupt_video_fails_with_a_message(tmp_path: Path) -> None:
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00not a video" * 100)
    with VideoFileSource(bad, loop=True) as source:
        assert wait_until(lambda: source.state == SourceState.FAILED, 5)
        assert source.latest() is None
        assert source.wait_for_frame(timeout=0.2) is None
    assert "broken.mp4" in source.message


# ---- image folder -------------------------------------------------------------------------------------


def _write_folder(folder: Path) -> None:
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f"frame_{i:02d}.png"), np.full((40, 50, 3), 10 * (i + 1), dtype=np.uint8))
    cv2.imwrite(str(folder / "frame_03_gray.png"), np.full((40, 50), 77, dtype=np.uint8))
    (folder / "frame_04_corrupt.png").write_bytes(b"garbage")
    (folder / "notes.txt").write_text("not an image")


def test_folder_once_in_name_order_skipping_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / "frames"
    _write_folder(folder)
    source = ImageFolderSource(folder, loop=False, interval_s=0.05).start()
    values = [int(frame.image.reshape(-1)[0]) for frame in iterate_frames(source, timeout=0.5)]
    source.stop()
    assert source.state == SourceState.ENDED and "4 images" in source.message
    expected = [10, 20, 30, 77]
    assert values == sorted(values, key=expected.index)  # a subsequence of name order (newest-only may skip)
    assert values[-1] == 77
    assert [p.name for p in source.skipped] == ["frame_04_corrupt.png"]


def test_folder_passes_grayscale_and_16_bit_through(tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    cv2.imwrite(str(folder / "a_gray.png"), np.full((30, 30), 200, dtype=np.uint8))
    cv2.imwrite(str(folder / "b_deep.png"), np.full((30, 30), 4000, dtype=np.uint16))
    source = ImageFolderSource(folder, loop=False, interval_s=0.2).start()
    first = source.wait_for_frame(timeout=3)
    assert first is not None and first.image.ndim == 2 and first.image.dtype == np.uint8
    second = source.wait_for_frame(first.index, timeout=3)
    assert second is not None and second.image.dtype == np.uint16 and int(second.image[0, 0]) == 4000
    assert source.stop()
    assert as_bgr8(second.image).dtype == np.uint8 and as_bgr8(second.image).shape == (30, 30, 3)


def test_folder_loops(tmp_path: Path) -> None:
    folder = tmp_path / "frames"
    _write_folder(folder)
    with ImageFolderSource(folder, loop=True, interval_s=0.01) as source:
        assert wait_until(lambda: (source.latest() or Frame(np.zeros(1), 0, 0)).index >= 10, 5)
        assert source.state == SourceState.RUNNING


def test_empty_folder_fails_and_watch_folder_picks_up_new_scans(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with ImageFolderSource(empty, loop=True) as source:
        assert wait_until(lambda: source.state == SourceState.FAILED, 3)
        assert "no images" in source.message

    drop = tmp_path / "sdk_drop"
    drop.mkdir()
    with ImageFolderSource(drop, watch=True, interval_s=0.01, poll_s=0.05) as watcher:
        assert wait_until(lambda: "waiting for images" in watcher.message, 3)
        assert watcher.latest() is None
        cv2.imwrite(str(drop / "scan_001.png"), np.full((20, 20), 9, dtype=np.uint8))
        frame = watcher.wait_for_frame(timeout=3)
        assert frame is not None and int(frame.image[0, 0]) == 9
        cv2.imwrite(str(drop / "scan_002.png"), np.full((20, 20), 11, dtype=np.uint8))
        newer = watcher.wait_for_frame(frame.index, timeout=3)
        assert newer is not None and int(newer.image[0, 0]) == 11
        time.sleep(0.2)
        assert watcher.latest() is newer  # files already shown are not replayed
        assert watcher.state == SourceState.RUNNING


# ---- live cameras -------------------------------------------------------------------------------------


def test_camera_unplugged_and_plugged_back() -> None:
    device = FakeDevice()
    source = fake_camera(device).start()
    try:
        assert wait_until(lambda: source.state == SourceState.RUNNING, 3)
        device.plugged = False
        assert wait_until(lambda: source.state == SourceState.RECONNECTING, 3)
        before = source.latest()
        assert before is not None  # the last frame stays available while the camera is away
        started = time.perf_counter()
        assert source.latest() is before
        assert time.perf_counter() - started < 0.01
        time.sleep(0.5)
        assert source.state == SourceState.RECONNECTING and "attempt" in source.message
        device.plugged = True
        assert wait_until(lambda: source.state == SourceState.RUNNING, 3)
        after = source.wait_for_frame(before.index, timeout=3)
        assert after is not None and after.index > before.index
        assert source.reconnects == 1
    finally:
        assert source.stop()


def test_reconnect_backoff_grows_to_the_cap() -> None:
    device = FakeDevice()
    device.plugged = False
    source = fake_camera(device, max_backoff_s=0.2, initial_backoff_s=0.025).start()
    try:
        assert wait_until(lambda: len(device.open_attempts) >= 7, 5)
    finally:
        assert source.stop()
    gaps = np.diff(device.open_attempts[:7])
    assert gaps[-1] > 2 * gaps[0]  # it grew from the initial back-off...
    assert 0.18 <= gaps[-1] < 0.5  # ...up to max_backoff_s (0.2 s) and no further
    assert gaps[-2] < 0.5
    assert source.state == SourceState.ENDED
    assert source.status().frames == 0


def test_missing_camera_keeps_retrying_and_stop_is_prompt() -> None:
    device = FakeDevice()
    device.plugged = False
    source = fake_camera(device, max_backoff_s=30.0, initial_backoff_s=10.0).start()
    assert wait_until(lambda: source.state == SourceState.RECONNECTING, 3)
    assert "not available" in source.message
    started = time.monotonic()
    assert source.stop(timeout=2.0)  # not stuck in its 10 s back-off sleep
    assert time.monotonic() - started < 1.0
    assert not source.running


def test_newest_frame_only_for_a_slow_consumer() -> None:
    device = FakeDevice(frame_delay_s=0.002)
    source = fake_camera(device).start()
    try:
        first = source.wait_for_frame(timeout=3)
        assert first is not None
        time.sleep(0.3)  # a slow consumer (e.g. an embedding) takes this long
        device.hang.set()  # freeze the camera so "newest" is well defined
        time.sleep(0.1)
        second = source.wait_for_frame(first.index, timeout=3)
        produced = device.produced
    finally:
        device.release_hang.set()
        source.stop()
    assert second is not None
    assert second.index - first.index > 10  # frames in between were dropped, not queued
    assert second.index == produced - 1  # the consumer got exactly the newest frame
    assert int(second.image[0, 0, 0]) == second.index % 256


def test_latest_never_blocks_while_the_device_read_hangs() -> None:
    device = FakeDevice()
    source = fake_camera(device).start()
    assert wait_until(lambda: source.latest() is not None, 3)
    device.hang.set()
    time.sleep(0.1)
    started = time.perf_counter()
    for _ in range(1000):
        source.latest()
    assert time.perf_counter() - started < 0.05
    assert source.wait_for_frame(source.latest().index, timeout=0.2) is None  # type: ignore[union-attr]
    assert source.stop(timeout=0.3) is False  # the read hangs: stop reports it instead of hanging too
    device.release_hang.set()
    assert wait_until(lambda: not source.running, 3)


def test_grayscale_scanner_frames_pass_through() -> None:
    device = FakeDevice(gray=True)
    with fake_camera(device) as source:
        frame = source.wait_for_frame(timeout=3)
    assert frame is not None and frame.image.shape == (48, 64)
    assert isinstance(source, FrameSource)


def test_capture_factory_exception_is_a_failed_attempt() -> None:
    calls = []

    def exploding() -> FakeCapture:
        calls.append(1)
        raise RuntimeError("driver error")

    source = LiveSource("camera boom", exploding, max_backoff_s=0.05, initial_backoff_s=0.01).start()
    assert wait_until(lambda: len(calls) >= 3, 3)
    assert source.state == SourceState.RECONNECTING
    assert source.stop()


# ---- spec parsing -------------------------------------------------------------------------------------


def test_open_source_parses_every_spec_form(tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"x")
    image = tmp_path / "photo.png"
    cv2.imwrite(str(image), np.zeros((8, 8, 3), np.uint8))
    folder = tmp_path / "frames"
    folder.mkdir()

    camera = open_source("0")
    assert isinstance(camera, LiveSource) and camera.name == "camera 0"
    assert isinstance(open_source(" 2 "), LiveSource)
    device = open_source("/dev/video7")
    assert isinstance(device, LiveSource) and device.name == "camera /dev/video7"
    stream = open_source("rtsp://admin:secret@10.0.0.5/stream1")
    assert isinstance(stream, LiveSource) and "secret" not in stream.name
    assert isinstance(open_source("http://cam.local/mjpeg"), LiveSource)
    assert isinstance(open_source(str(folder)), ImageFolderSource)
    assert isinstance(open_source(str(image)), StillImageSource)
    looped = open_source(str(video), loop=False)
    assert isinstance(looped, VideoFileSource) and not looped.loop
    assert not camera.running  # returned unstarted unless asked

    with pytest.raises(DataError, match="not a camera index"):
        open_source(str(tmp_path / "missing.mp4"))
    with pytest.raises(DataError, match="empty"):
        open_source("  ")


def test_still_image_source_repeats_one_photo(tmp_path: Path) -> None:
    image = tmp_path / "photo.png"
    cv2.imwrite(str(image), np.full((8, 8, 3), 5, np.uint8))
    with open_source(str(image), folder_interval_s=0.01, start=True) as source:
        assert wait_until(lambda: (source.latest() or Frame(np.zeros(1), 0, 0)).index >= 3, 3)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"nope")
    with open_source(str(broken), start=True) as failed:
        assert wait_until(lambda: failed.state == SourceState.FAILED, 3)


def test_configured_sources(base_config: object, tmp_path: Path) -> None:
    from kiosk.identity.sources import configured_source

    capture = base_config.capture.model_copy(  # type: ignore[attr-defined]
        update={"face_source": str(tmp_path), "palm_source": None}
    )
    face = configured_source(capture, "face")
    assert isinstance(face, ImageFolderSource) and face.loop  # a folder standing in for a camera replays
    assert configured_source(capture, "palm") is None


def test_a_stopped_source_can_be_started_again() -> None:
    device = FakeDevice()
    source = fake_camera(device)
    source.start()
    first = source.wait_for_frame(timeout=3)
    assert first is not None and source.stop()
    source.start()
    assert source.start() is source  # idempotent while running
    later = source.wait_for_frame(first.index, timeout=3)
    assert later is not None and later.index > first.index
    assert source.stop()


def test_a_camera_that_opens_but_never_delivers_backs_off() -> None:
    opened: list[float] = []

    class Silent:
        def isOpened(self) -> bool:
            return True

        def read(self) -> tuple[bool, np.ndarray | None]:
            return False, None

        def release(self) -> None:
            pass

        def get(self, prop_id: int) -> float:
            return 0.0

    def factory() -> Silent:
        opened.append(time.monotonic())
        return Silent()

    source = LiveSource(
        "camera mute", factory, max_backoff_s=0.2, initial_backoff_s=0.02, read_failures_before_reconnect=1
    ).start()
    assert wait_until(lambda: len(opened) >= 6, 5)
    assert "delivers no frames" in source.message and source.state == SourceState.RECONNECTING
    assert source.stop()
    gaps = np.diff(opened[:6])
    assert gaps[-1] > 3 * gaps[0]  # growing, not spinning at the initial back-off
