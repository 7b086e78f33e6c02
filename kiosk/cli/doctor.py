"""`kiosk doctor`: is this terminal healthy, and if not, what to fix."""

from __future__ import annotations

import typer

from kiosk.cli.common import JsonOption, config, emit, handle_errors
from kiosk.doctor import CHECKS, Check, run_checks

MARKS = {"ok": "✔", "warn": "!", "fail": "✘"}


def _human(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        line = f"{MARKS[check.status]} {check.name}: {check.message}"
        lines.append(f"{line}\n    fix: {check.fix}" if check.status != "ok" and check.fix else line)
    failed = sum(c.status == "fail" for c in checks)
    lines.append("all green" if not failed else f"{failed} problem(s) to fix")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @handle_errors
    def doctor(
        skip: list[str] = typer.Option([], "--skip", help=f"Checks to skip: {', '.join(CHECKS)}."),
        quiet: bool = typer.Option(False, "--quiet", help="Print only problems."),
        as_json: bool = JsonOption,
    ) -> None:
        """Check cameras, models and checksums, calibration vs model, DB integrity and free disk."""
        checks = run_checks(config(), tuple(skip))
        shown = [c for c in checks if c.status != "ok"] if quiet else checks
        emit(
            {"healthy": all(c.status != "fail" for c in checks), "checks": [c.as_dict() for c in shown]},
            as_json,
            lambda _: _human(shown),
        )
        if any(c.status == "fail" for c in checks):
            raise typer.Exit(1)
