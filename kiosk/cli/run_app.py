"""Start the Qt app, or explain clearly why it cannot start here."""

from __future__ import annotations

import os

import typer

from kiosk.cli import common


def run_app(desktop: bool, exit_after_s: float | None = None) -> None:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM")):
        typer.echo(
            "The kiosk app needs a display: none is set (DISPLAY / WAYLAND_DISPLAY are empty).\n"
            "Run it on the terminal's screen, under a compositor (see packaging/), or try it headless with\n"
            "  QT_QPA_PLATFORM=offscreen kiosk --desktop\n"
            "It also needs a camera (capture.face_source) or a video file, e.g.\n"
            "  KIOSK_CAPTURE__FACE_SOURCE=path/to/video.mp4 kiosk --desktop",
            err=True,
        )
        raise typer.Exit(3)
    try:
        from kiosk.ui.app import run
    except ImportError as exc:
        typer.echo(f"The kiosk app cannot start: {exc}", err=True)
        raise typer.Exit(3) from exc
    raise typer.Exit(run(common.config, desktop=desktop, exit_after_s=exit_after_s))
