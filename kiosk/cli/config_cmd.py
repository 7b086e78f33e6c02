"""`kiosk config show|path`."""

from __future__ import annotations

import typer

from kiosk.cli.common import JsonOption, config, emit, handle_errors
from kiosk.config import KioskConfig, default_config_path


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Show the effective configuration and where it comes from.", no_args_is_help=True)

    @sub.command("show")
    @handle_errors
    def show(as_json: bool = JsonOption) -> None:
        """Print every setting with its effective value."""
        emit(config().model_dump(mode="json"), as_json)

    @sub.command("describe")
    @handle_errors
    def describe(as_json: bool = JsonOption) -> None:
        """Print every setting with its default and description."""
        rows = []
        for section_name, section_field in KioskConfig.model_fields.items():
            section_type = section_field.annotation
            for name, field in section_type.model_fields.items():  # type: ignore[union-attr]
                rows.append({"key": f"{section_name}.{name}", "description": field.description or ""})
        emit(rows, as_json, lambda r: "\n".join(f"{x['key']:36} {x['description']}" for x in r))

    @sub.command("path")
    def path() -> None:
        """Print the default config file location."""
        typer.echo(str(default_config_path()))

    app.add_typer(sub, name="config")
