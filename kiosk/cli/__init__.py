"""The `kiosk` command. Each feature registers its own sub-commands; this module only wires them."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import typer

from kiosk.cli import common
from kiosk.cli import models as models_cli
from kiosk.identity.image_files import MAX_IMAGE_PIXELS
from kiosk.security.private_files import PRIVATE_UMASK

app = typer.Typer(
    help="Bio-Memory Kiosk: a shared-terminal assistant whose memory is gated by face or palm.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(models_cli.app, name="models")


FEATURE_COMMANDS = (
    "config_cmd",
    "calibrate",
    "users",
    "groups",
    "ask",
    "memory",
    "eval",
    "doctor",
    "security",
    "store",
)
"""Modules under kiosk/cli/ that each add their commands with `register(app)`."""


def _register_features() -> None:
    for module in FEATURE_COMMANDS:
        importlib.import_module(f"kiosk.cli.{module}").register(app)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    config_file: Path = typer.Option(None, "--config", help="TOML configuration file.", envvar="KIOSK_CONFIG"),
    desktop: bool = typer.Option(False, "--desktop", help="Windowed family-assistant desktop mode."),
    exit_after: float = typer.Option(
        None, "--exit-after", min=0, hidden=True, help="Smoke test: run SECONDS once ready, print a status line, exit."
    ),
) -> None:
    """With no sub-command, start the kiosk app (full-screen; --desktop for a window)."""
    common.set_config_path(config_file)
    if ctx.invoked_subcommand is None:
        from kiosk.cli.run_app import run_app

        run_app(desktop=desktop, exit_after_s=exit_after)


ROOT_OPTIONS_WITH_VALUE = ("--config", "--exit-after")


def sub_command(argv: list[str]) -> str | None:
    """The sub-command an argument list runs (None: the app itself)."""
    rest = list(argv)
    while rest and rest[0].startswith("-"):
        if rest.pop(0) in ROOT_OPTIONS_WITH_VALUE and rest:
            rest.pop(0)
    return rest[0] if rest else None


def main() -> None:
    if sub_command(sys.argv[1:]) != "models":  # model files are no secret: a bundle exports them for its users
        os.umask(PRIVATE_UMASK)  # the memory DB, its -wal/-shm, logs, keys and backups: the user's only
    os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")  # camera probing warnings are ours to report, not OpenCV's
    # OpenCV reads its pixel cap once, when it loads: a second fence behind kiosk.identity.image_files.
    os.environ.setdefault("OPENCV_IO_MAX_IMAGE_PIXELS", str(MAX_IMAGE_PIXELS))
    _register_features()
    app()
