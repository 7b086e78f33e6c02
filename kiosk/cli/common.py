"""Shared CLI plumbing: config loading, one-line errors, JSON or human output."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer

from kiosk.config import KioskConfig, load_config
from kiosk.errors import DataError, KioskError

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
    typer.echo(f"error: {printable(message)}", err=True)
    raise typer.Exit(code)


_C1_AND_BIDI = r"\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_TERMINAL_UNSAFE = re.compile(rf"[\x00-\x08\x0a-\x1f{_C1_AND_BIDI}]")  # a tab is harmless
_TERMINAL_UNSAFE_BUT_NEWLINE = re.compile(rf"[\x00-\x08\x0b-\x1f{_C1_AND_BIDI}]")
_JSON_UNESCAPED = re.compile(rf"[{_C1_AND_BIDI}]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED_ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` safe to print on a terminal: control characters (ESC sequences, BEL, CR, C1 codes, bidi overrides)
    become visible escapes such as \\x1b, so a stored note cannot move the cursor, recolour or rewrite the screen."""
    return (_TERMINAL_UNSAFE_BUT_NEWLINE if keep_newlines else _TERMINAL_UNSAFE).sub(_escaped, text)


def _json_text(text: str) -> str:
    """json.dumps escapes C0 controls itself; the C1 and bidi controls it leaves raw become \\u escapes."""
    return _JSON_UNESCAPED.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


SQLITE_MAX_INTEGER = 2**63 - 1


def check_row_number(value: int | None, what: str) -> None:
    """DataError for an id, limit or offset no database row can have (SQLite integers are 64-bit)."""
    if value is not None and abs(value) > SQLITE_MAX_INTEGER:
        raise DataError(f"{what} {value} is out of range", f"give a number up to {SQLITE_MAX_INTEGER}")


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
        sys.stdout.write(_json_text(json.dumps(payload, default=_default, ensure_ascii=False)) + "\n")
    elif human is not None:
        typer.echo(printable(human(payload), keep_newlines=True))
    else:
        typer.echo(_json_text(json.dumps(payload, default=_default, ensure_ascii=False, indent=2)))
