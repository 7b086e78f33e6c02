"""The `kiosk` command. Each feature registers its own sub-commands; this module only wires them."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import typer

from kiosk.cli import common
from kiosk.cli import models as models_cli

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


def main() -> None:
    os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")  # camera probing warnings are ours to report, not OpenCV's
    _register_features()
    app()
