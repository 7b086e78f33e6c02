"""`kiosk remember` and `kiosk memory import|list|delete|restore|mark|archive-faded|faded`: notes in, looked at, out."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import typer

from kiosk.cli.common import JsonOption, check_row_number, config, emit, handle_errors, printable
from kiosk.config import KioskConfig
from kiosk.errors import ConfigError, DataError, StoreError
from kiosk.local_time import local_now, local_stamp, zone_named
from kiosk.memory.build import Mode, NoteBuilder
from kiosk.memory.instructions import INSTRUCTIONS_MARK, instruction_signals
from kiosk.memory.open import open_store
from kiosk.memory.store import Store
from kiosk.security.audit import audit_log_for
from kiosk.security.private_files import private_dir, private_file

memory_app = typer.Typer(help="Long-term memory notes: import conversations, list and delete notes.")

ConstructOption = typer.Option(
    None, "--construct", help="Note construction: 'llm' (A-Mem with the LLM) or 'fast' (no LLM); default from config."
)
ModalityOption = typer.Option("face", "--modality", help="Modality the owner was verified with (face or palm).")


def _mode(cfg: KioskConfig, construct: str | None) -> Mode:
    mode = construct or cfg.memory.construction
    if mode not in ("fast", "llm"):
        raise ConfigError(f"--construct must be 'fast' or 'llm', not '{construct}'", "pick one of the two")
    return "llm" if mode == "llm" else "fast"


def _builder(cfg: KioskConfig, store: Store, mode: Mode) -> NoteBuilder:
    from kiosk.text import load_text_encoder

    llm = None
    if mode == "llm":
        from kiosk.llm import create_llm

        llm = create_llm(cfg)
    return NoteBuilder(store, load_text_encoder(cfg), cfg.memory, llm)


def _store(cfg: KioskConfig) -> Store:
    _log_to_file(cfg)
    return open_store(cfg)


def _log_to_file(cfg: KioskConfig) -> None:
    """Construction failures (invalid LLM replies, skipped items) go to <logs>/memory.log."""
    try:
        log_file = private_file(private_dir(cfg.paths.logs) / "memory.log")
        handler = logging.FileHandler(log_file, encoding="utf-8")
    except OSError:
        return  # a read-only log dir must not stop memory commands
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("kiosk.memory", "kiosk.llm"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def _user(store: Store, name: str) -> Any:
    user = store.user_by_name(name)
    if user is None:
        raise StoreError(f"no user named '{name}'", "enroll them with `kiosk users enroll` (see `kiosk memory users`)")
    return user


def _argv_bytes(text: str) -> str | bytes:
    """Recover the raw bytes of an argument Python decoded with surrogateescape (invalid UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape")
    return text


@handle_errors
def remember_cmd(
    text: str = typer.Argument(..., help="What to remember ('-' reads standard input)."),
    user: str = typer.Option(..., "--user", help="The verified user's name (until identity gating lands)."),
    scope: str = typer.Option(
        "personal", "--scope", help="Who may read it: personal, group:NAME (the user must be a member) or public."
    ),
    construct: str = ConstructOption,
    modality: str = ModalityOption,
    as_json: bool = JsonOption,
) -> None:
    """Store one message said by the user as a memory note in a scope; prints the stored note's id."""
    from kiosk.memory.ingest import remember
    from kiosk.memory.scopes import owner_for, parse_scope

    cfg = config()
    parsed = parse_scope(scope)  # a typo fails before any model loads
    mode = _mode(cfg, construct)
    raw: str | bytes = sys.stdin.buffer.read() if text == "-" else _argv_bytes(text)
    with _store(cfg) as store:
        author = _user(store, user)
        owner_id = owner_for(store, parsed, author.id)
        when = local_now(zone_named(cfg.ui.time_zone))  # "said this on ..." in the terminal's time zone
        report = remember(
            _builder(cfg, store, mode), author, raw, modality=modality, mode=mode, owner_id=owner_id, when=when
        )

    def human(r: dict[str, Any]) -> str:
        sensitivity = r["note"]["sensitivity"]
        mark = f", marked sensitive: {sensitivity} by {r['sensitivity_source']}" if sensitivity else ""
        if r["reads_as_instructions"]:
            mark += f"; flagged: {INSTRUCTIONS_MARK}"
        return (
            f"stored note {r['note']['id']} for {user} in scope {r['note']['scope']} ({r['mode']} construction{mark})"
        )

    emit({**report.as_dict(), "reads_as_instructions": instruction_signals(report.note.content)}, as_json, human)


@handle_errors
def import_cmd(
    file: Path = typer.Argument(..., help="LoCoMo-format conversation JSON (a list of samples, or one)."),
    user: str = typer.Option(None, "--user", help="Store every conversation for this user (created if absent)."),
    user_per_conversation: bool = typer.Option(
        False, "--user-per-conversation", help="One user per conversation, named by its sample_id."
    ),
    construct: str = ConstructOption,
    modality: str = ModalityOption,
    limit: int = typer.Option(None, "--limit", min=1, help="Import at most this many new turns (then stop)."),
    as_json: bool = JsonOption,
) -> None:
    """Import conversations: one note per turn, resumable (turns already stored for the user are skipped)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from kiosk.memory.ingest import import_conversations

    if (user is None) == (not user_per_conversation):
        raise DataError("give exactly one of --user NAME and --user-per-conversation", "see --help")
    cfg = config()
    mode = _mode(cfg, construct)
    with _store(cfg) as store:
        builder = _builder(cfg, store, mode)
        columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, transient=as_json, disable=as_json) as bar:
            task = bar.add_task("turns", total=None)
            report = import_conversations(
                file,
                builder,
                store,
                user_name=user,
                mode=mode,
                modality=modality,
                limit=limit,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
    emit(report.as_dict(), as_json, _import_summary)
    if report.failed:
        raise typer.Exit(1)


def _import_summary(report: dict[str, Any]) -> str:
    lines = [
        f"{report['file']}: {report['added']} notes added, {report['skipped']} already stored, "
        f"{report['failed']} failed ({report['mode']} construction)"
    ]
    lines += [f"  {conversation} -> user {name}" for conversation, name in report["conversations"].items()]
    lines += [f"  error {printable(str(e['ref']))}: {printable(str(e['error']))}" for e in report["errors"][:50]]
    if len(report["errors"]) > 50:
        lines.append(f"  ... {len(report['errors']) - 50} more errors (use --json for all)")
    return "\n".join(lines)


def _owner_of_listing(store: Store, user: str | None, scope: str | None) -> tuple[int, str]:
    from kiosk.memory.scopes import parse_scope, public_owner

    if (user is None) == (scope is None):
        raise DataError("give exactly one of --user NAME and --scope group:NAME|public", "see --help")
    if user is not None:
        owner = _user(store, user)
        return owner.id, owner.name
    parsed = parse_scope(scope or "")
    if parsed.kind == "personal":
        raise DataError("--scope personal needs a person", "use --user NAME to list someone's personal notes")
    if parsed.kind == "public":
        return public_owner(store), "public"
    group = store.group_by_name(parsed.group or "")
    if group is None:
        raise StoreError(f"no group named '{parsed.group}'", "see `kiosk groups list`")
    return group.id, str(parsed)


@handle_errors
def list_cmd(
    user: str = typer.Option(None, "--user", help="Whose personal notes to list."),
    scope: str = typer.Option(None, "--scope", help="List a group's (group:NAME) or the public notes instead."),
    limit: int = typer.Option(None, "--limit", min=1, help="At most this many notes."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip this many notes first."),
    as_json: bool = JsonOption,
) -> None:
    """List notes in chronological order; archived (faded) notes are listed too, marked."""
    check_row_number(limit, "--limit")
    check_row_number(offset, "--offset")
    cfg = config()
    with _store(cfg) as store:
        owner_id, title = _owner_of_listing(store, user, scope)
        notes = store.list_notes(owner_id, limit=limit, offset=offset)
        zone = zone_named(cfg.ui.time_zone)
        payload = {
            "user": title,
            "total": store.count_notes(owner_id),
            "notes": [{**n.as_dict(), "reads_as_instructions": instruction_signals(n.content)} for n in notes],
        }

    def human(data: dict[str, Any]) -> str:
        rows = [f"{data['user']}: {data['total']} notes"]
        for note in data["notes"]:
            ref = f" [{note['source_ref']}]" if note["source_ref"] else ""
            mark = f" [sensitive: {note['sensitivity']}]" if note["sensitivity"] else ""
            archived = " (archived)" if note["archived_at"] else ""
            if note["reads_as_instructions"]:
                mark += f" [{INSTRUCTIONS_MARK}]"
            rows.append(
                f"  #{note['id']} {local_stamp(note['timestamp'], zone)}{printable(ref)}{mark}{archived} "
                f"{printable(note['content'][:100])}"
            )
        return "\n".join(rows)

    emit(payload, as_json, human)


@handle_errors
def restore_cmd(
    note_id: int = typer.Argument(..., help="Id of an archived note."),
    as_json: bool = JsonOption,
) -> None:
    """Bring an archived note back into retrieval (its strength restarts at full)."""
    from datetime import UTC, datetime

    check_row_number(note_id, "note id")
    cfg = config()
    with _store(cfg) as store:
        note = store.restore_note(note_id, datetime.now(UTC))
    emit(note.as_dict(), as_json, lambda n: f"restored note {n['id']} ({n['scope']})")


@handle_errors
def archive_faded_cmd(
    floor: float = typer.Option(None, "--floor", help="Strength floor (default: config forgetting.archive_below)."),
    half_life_days: float = typer.Option(
        None, "--half-life-days", help="Half-life in days (default: config forgetting.half_life_days)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Archive every note (all owners) whose strength fell below the floor; nothing is deleted."""
    from datetime import UTC, datetime

    from kiosk.memory.forgetting import Decay, archive_faded, check_floor

    cfg = config()
    settings = cfg.forgetting
    decay = Decay(settings.half_life_days if half_life_days is None else half_life_days)
    chosen = check_floor(settings.archive_below if floor is None else floor)
    with _store(cfg) as store:
        public = store.public_owner_id()
        owners = [u.id for u in store.list_users()] + [g.id for g in store.list_groups()]
        owners += [public] if public is not None else []
        archived = archive_faded(store, owners, datetime.now(UTC), decay, chosen)
    emit(
        {"archived": archived, "floor": chosen, "half_life_days": decay.half_life_days},
        as_json,
        lambda p: f"archived {len(p['archived'])} faded note(s) (strength < {p['floor']})",
    )


@handle_errors
def faded_cmd(
    below: float = typer.Option(None, "--below", help="Strength under which a note counts as faded (default 0.5)."),
    as_json: bool = JsonOption,
) -> None:
    """List the faded notes of every person, group and the public notes: dates, uses and strength, no text.
    Nothing is deleted: archived notes stay listed and `kiosk memory restore ID` brings one back."""
    from datetime import UTC, datetime

    from kiosk.memory.forgetting import FADED_BELOW, Decay, faded_by_owner

    cfg = config()
    decay = Decay.from_config(cfg.forgetting)
    chosen = FADED_BELOW if below is None else below
    if not 0.0 < chosen <= 1.0:
        raise DataError(f"--below must be in (0, 1], not {chosen}", "use e.g. 0.5 (a half-life or more unused)")
    with _store(cfg) as store:
        faded = faded_by_owner(store, datetime.now(UTC), decay, chosen)
    zone = zone_named(cfg.ui.time_zone)
    payload = {
        "below": chosen,
        "half_life_days": decay.half_life_days,
        "weight": cfg.forgetting.weight,
        "owners": {owner: [note.as_dict() for note in notes] for owner, notes in faded.items()},
    }

    def human(data: dict[str, Any]) -> str:
        rows = [f"notes with strength < {data['below']} (half-life {data['half_life_days']:g} days)"]
        if data["weight"] == 0:
            rows.append("  decay is off in ranking (forgetting.weight = 0): faded notes still rank as fresh ones")
        for owner, notes in data["owners"].items():
            rows.append(f"{printable(owner)}: {len(notes)} faded")
            rows += [
                f"  #{n['id']} said {local_stamp(n['said_at'], zone)}, last used {local_stamp(n['last_used_at'], zone)}"
                f", used {n['reinforcements']}x, strength {n['strength']:.3f}"
                + (" (archived)" if n["archived"] else "")
                for n in notes
            ]
        if not data["owners"]:
            rows.append("  none")
        return "\n".join(rows)

    emit(payload, as_json, human)


@handle_errors
def delete_cmd(
    note_id: int = typer.Argument(..., help="Id of the note to delete (with its vector and every link to it)."),
    as_json: bool = JsonOption,
) -> None:
    """Delete one note, its vector, its history and every link pointing to it."""
    check_row_number(note_id, "note id")
    cfg = config()
    with _store(cfg) as store:
        note = store.get_note(note_id)
        store.delete_note(note_id)
    audit_log_for(cfg).record("note-deleted", user_id=note.owner_id if note else None, note_id=note_id, by="cli")
    emit({"deleted": note_id}, as_json, lambda p: f"deleted note {p['deleted']}")


@handle_errors
def mark_cmd(
    note_id: int = typer.Argument(..., help="Id of the note to mark (see `kiosk memory list`)."),
    sensitive: str = typer.Option(
        None, "--sensitive", help="Its category: credentials, health, finance, location or third_party."
    ),
    not_sensitive: bool = typer.Option(False, "--not-sensitive", help="Mark it not sensitive."),
    as_json: bool = JsonOption,
) -> None:
    """Set a note's sensitivity by hand (an admin's mark): sensitive notes need the stricter check, and no
    automatic rewrite changes a mark made by hand."""
    from kiosk.memory.sensitivity import validate_category

    check_row_number(note_id, "note id")
    if (sensitive is None) == (not not_sensitive):
        raise DataError("give exactly one of --sensitive CATEGORY and --not-sensitive", "see --help")
    category = None if not_sensitive else validate_category(sensitive)
    if category is None and not not_sensitive:
        raise DataError("--sensitive needs a category", "use --not-sensitive to clear the mark")
    cfg = config()
    with _store(cfg) as store:
        note = store.mark_sensitivity(note_id, category, "admin")
    audit_log_for(cfg).record(
        "note-marked", user_id=note.owner_id, note_id=note_id, sensitive=category is not None, by="cli"
    )
    emit(
        {"id": note_id, "sensitivity": note.sensitivity, "scope": note.scope},
        as_json,
        lambda p: (
            f"note {p['id']} ({p['scope']}): "
            + (f"sensitive: {p['sensitivity']}" if p["sensitivity"] else "not sensitive")
        ),
    )


@handle_errors
def users_cmd(as_json: bool = JsonOption) -> None:
    """List users with their note counts."""
    cfg = config()
    with _store(cfg) as store:
        payload = [{"id": u.id, "name": u.name, "notes": store.count_notes(u.id)} for u in store.list_users()]
    emit(payload, as_json, lambda rows: "\n".join(f"#{r['id']} {r['name']}: {r['notes']} notes" for r in rows))


memory_app.command("import")(import_cmd)
memory_app.command("list")(list_cmd)
memory_app.command("delete")(delete_cmd)
memory_app.command("restore")(restore_cmd)
memory_app.command("mark")(mark_cmd)
memory_app.command("archive-faded")(archive_faded_cmd)
memory_app.command("faded")(faded_cmd)
memory_app.command("users")(users_cmd)


def register(app: typer.Typer) -> None:
    app.command("remember")(remember_cmd)
    app.add_typer(memory_app, name="memory")
