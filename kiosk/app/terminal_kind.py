"""Which biometrics a terminal has, from its capture settings (light: the screens ask it before anything loads)."""

from __future__ import annotations

from kiosk.config import CaptureConfig


def has_scanner(capture: CaptureConfig) -> bool:
    """A palm scanner is configured (capture.palm_source)."""
    return bool(capture.palm_source and capture.palm_source.strip())


def palm_only(capture: CaptureConfig) -> bool:
    """The palm scanner is the terminal's only biometric: no camera is configured (an empty face_source)."""
    return has_scanner(capture) and not capture.face_source.strip()
