"""Face latency helpers: reading the video frames every pipeline is timed on."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from bench.face_latency import video_frames


def write_video(path: Path, shades: list[int]) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (32, 24))
    assert writer.isOpened()
    for shade in shades:
        writer.write(np.full((24, 32, 3), shade, np.uint8))
    writer.release()


def test_video_frames_stops_at_the_limit_in_order(tmp_path: Path) -> None:
    path = tmp_path / "clip.avi"
    write_video(path, [0, 60, 120, 180, 240])
    frames = video_frames(path, 3)
    assert [round(float(frame.mean()) / 60) for frame in frames] == [0, 1, 2]
    assert frames[0].shape == (24, 32, 3)


def test_video_frames_returns_every_frame_of_a_shorter_video(tmp_path: Path) -> None:
    path = tmp_path / "clip.avi"
    write_video(path, [0, 60, 120, 180, 240])
    assert len(video_frames(path, 100)) == 5


def test_video_frames_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert video_frames(tmp_path / "absent.mp4", 10) == []
