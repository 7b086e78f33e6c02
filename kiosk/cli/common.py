"""Shared CLI plumbing: config loading, one-line errors, JSON or human output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer

from kiosk.config import KioskConfig, load_config
from kiosk.errors import KioskError

P = ParamSpec("P")
R = TypeVar("R")

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON instead of text.")

_config_path: Path | None = None


def set_config_path(path: Path | None) -> None:
    global _config_path
    _config_path = path


def config() -> KioskConfig:
    return load_config(_config_path)


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn expected failures into one clear line on stderr and a non-zero exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except KioskError as exc:
            fail(exc.one_line())
        except KeyboardInterrupt:
            fail("interrupted", code=130)
        raise AssertionError("unreachable")

    return wrapper


def _default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "as_dict"):
        return value.as_dict()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def emit(payload: Any, as_json: bool, human: Callable[[Any], str] | None = None) -> None:
    """Print `payload` as JSON, or through `human` (default: pretty JSON) for people."""
    if as_json:
        sys.stdout.write(json.dumps(payload, default=_default, ensure_ascii=False) + "\n")
    elif human is not None:
        typer.echo(human(payload))
    else:
        typer.echo(json.dumps(payload, default=_default, ensure_ascii=False, indent=2))
