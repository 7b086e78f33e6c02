"""Synthetic presentation attacks made from real face images, for the PAD benchmark and tests.

None of this is a real printed photo or a real screen in front of a real camera: these are renderings of what such
attacks do to the pixels, made from the shared face data, so the passive cues can be exercised and an APCER
reported. Every generator is deterministic for a given seed.

- `printed_photo`: a still image as it looks on paper (washed-out colour, compressed contrast, slight blur,
  optionally a halftone dot screen) held in front of the camera: a plane moved rigidly (small 3-D tilt, shift,
  scale) with fresh camera noise in each frame.
- `frozen_still`: the same frame again and again (an injected still image or a frozen stream).
- `screen_replay`: real video frames shown on a screen and filmed: display gamma, the RGB sub-pixel grid
  resampled by the camera (moire), refresh banding rolling through the picture, slight tilt, camera noise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import cv2
import numpy as np


def _camera_noise(image: np.ndarray, rng: np.random.Generator, sigma: float = 2.0) -> np.ndarray:
    noisy = image.astype(np.float32) + rng.normal(0.0, sigma, size=image.shape).astype(np.float32)
    return np.clip(noisy + 0.5, 0, 255).astype(np.uint8)


def print_look(bgr: np.ndarray, rng: np.random.Generator, halftone: bool = False) -> np.ndarray:
    """A still as printed on paper: desaturated, contrast squeezed between paper white and ink black, softer."""
    image = bgr.astype(np.float32) / 255.0
    gray = image.mean(axis=2, keepdims=True)
    image = gray + (image - gray) * rng.uniform(0.55, 0.8)
    image = 0.08 + image * rng.uniform(0.78, 0.86)  # ink black ~0.08, paper white ~0.9
    image = image ** rng.uniform(1.1, 1.3)
    image = cv2.GaussianBlur(image, (0, 0), rng.uniform(0.6, 1.0))
    if halftone:
        height, width = image.shape[:2]
        period = rng.uniform(3.0, 4.5)
        ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
        angle = np.deg2rad(45.0)
        u = (xs * np.cos(angle) + ys * np.sin(angle)) * 2 * np.pi / period
        v = (-xs * np.sin(angle) + ys * np.cos(angle)) * 2 * np.pi / period
        dots = 0.5 + 0.5 * np.cos(u) * np.cos(v)
        image = image * (0.82 + 0.18 * dots[..., None])
    return np.clip(image * 255.0 + 0.5, 0, 255).astype(np.uint8)


def _plane_homography(
    width: int, height: int, tilt_x: float, tilt_y: float, scale: float, shift: tuple[float, float], roll: float
) -> np.ndarray:
    """Homography of a flat picture tilted by (tilt_x, tilt_y) degrees about its centre, seen by a pinhole camera."""
    focal = 1.2 * max(width, height)
    ax, ay, az = np.deg2rad([tilt_x, tilt_y, roll])
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    rotation = rz @ ry @ rx
    camera = np.array([[focal, 0, width / 2], [0, focal, height / 2], [0, 0, 1]])
    # picture plane at depth `focal` (so it fills the frame at scale 1), centred on the optical axis
    to_plane = np.array([[1, 0, -width / 2], [0, 1, -height / 2], [0, 0, focal]], dtype=np.float64)
    plane = rotation @ to_plane
    homography = camera @ plane
    placement = np.array([[scale, 0, shift[0]], [0, scale, shift[1]], [0, 0, 1]])
    return placement @ (homography / homography[2, 2])


def printed_photo(
    still: np.ndarray, frames: int, seed: int, *, halftone: bool = False, frame_size: tuple[int, int] | None = None
) -> Iterator[np.ndarray]:
    """`frames` camera frames of `still` printed and held in front of the camera by a slightly moving hand."""
    rng = np.random.default_rng(seed)
    printed = print_look(still, rng, halftone)
    width, height = frame_size or (printed.shape[1], printed.shape[0])
    if (width, height) != (printed.shape[1], printed.shape[0]):
        printed = cv2.resize(printed, (width, height), interpolation=cv2.INTER_LINEAR)
    background = cv2.GaussianBlur(printed, (0, 0), 25) // 2
    phase = rng.uniform(0, 2 * np.pi, size=5)
    amplitude = rng.uniform(0.5, 1.0, size=5)
    for index in range(frames):
        t = index / 10.0  # seconds at the kiosk's analysis rate
        tilt_x = 8 * amplitude[0] * np.sin(2 * np.pi * 0.4 * t + phase[0])
        tilt_y = 10 * amplitude[1] * np.sin(2 * np.pi * 0.3 * t + phase[1])
        roll = 3 * amplitude[2] * np.sin(2 * np.pi * 0.5 * t + phase[2])
        shift = (
            12 * amplitude[3] * np.sin(2 * np.pi * 0.35 * t + phase[3]),
            8 * amplitude[4] * np.sin(2 * np.pi * 0.45 * t + phase[4]),
        )
        scale = 0.9 + 0.05 * np.sin(2 * np.pi * 0.25 * t)
        matrix = _plane_homography(
            width,
            height,
            tilt_x,
            tilt_y,
            scale,
            (shift[0] + width * (1 - scale) / 2, shift[1] + height * (1 - scale) / 2),
            roll,
        )
        frame = cv2.warpPerspective(
            printed, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        mask = cv2.warpPerspective(np.ones((height, width), np.uint8), matrix, (width, height)) > 0
        frame = np.where(mask[..., None], frame, background)
        yield _camera_noise(frame, rng)


def frozen_still(still: np.ndarray, frames: int) -> Iterator[np.ndarray]:
    for _ in range(frames):
        yield still.copy()


def screen_replay(video_frames: Sequence[np.ndarray], seed: int) -> Iterator[np.ndarray]:
    """Real frames replayed on a screen and filmed: gamma, RGB sub-pixel grid + camera resampling, refresh bands."""
    rng = np.random.default_rng(seed)
    gamma = rng.uniform(0.8, 1.25)  # display gamma against the camera's: darker or lighter mid-tones
    camera_scale = rng.uniform(0.88, 0.96)  # the screen appears slightly smaller than the camera frame
    angle = rng.uniform(-2.0, 2.0)
    band_period = rng.uniform(40.0, 90.0)  # pixels between refresh bands
    band_speed = rng.uniform(0.2, 0.45)  # band periods per frame
    band_depth = rng.uniform(0.04, 0.08)
    grid_contrast = rng.uniform(0.25, 0.5)
    for index, frame in enumerate(video_frames):
        height, width = frame.shape[:2]
        image = (frame.astype(np.float32) / 255.0) ** gamma
        # each screen pixel becomes 3 x 3 sub-pixels: R, G, B columns and a dark row gap
        big = cv2.resize(image, (width * 3, height * 3), interpolation=cv2.INTER_NEAREST)
        grid = np.zeros((3, 3, 3), dtype=np.float32)
        for channel, column in ((2, 0), (1, 1), (0, 2)):  # BGR image: R in column 0, G 1, B 2
            grid[:2, column, channel] = 1.0
        grid = (1.0 - grid_contrast) + grid_contrast * grid / grid.mean()  # lens blur and glare soften the grid
        big = cv2.GaussianBlur(big * np.tile(grid, (height, width, 1)), (0, 0), 0.9)  # optics before sampling
        matrix = cv2.getRotationMatrix2D((width * 1.5, height * 1.5), angle, camera_scale / 3.0)
        matrix[:, 2] += [width / 2 - width * 1.5, height / 2 - height * 1.5]
        filmed = cv2.warpAffine(big, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        rows = np.arange(height, dtype=np.float32)[:, None, None]
        bands = 1.0 - band_depth * (0.5 + 0.5 * np.sin(2 * np.pi * (rows / band_period + band_speed * index)))
        filmed = np.clip(filmed * bands, 0, 1) * 255.0
        yield _camera_noise(filmed, rng)
