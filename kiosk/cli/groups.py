"""`kiosk groups ...`: named groups of enrolled people who share the group's notes."""

from __future__ import annotations

from typing import Any

import typer

from kiosk.cli.common import JsonOption, config, emit, fail, handle_errors
from kiosk.errors import StoreError
from kiosk.memory.note import Group, User
from kiosk.memory.open import open_store
from kiosk.memory.store import Store

groups_app = typer.Typer(help="Groups (a family, a ward, a team): any verified member reads the group's notes.")


def _group(store: Store, name: str) -> Group:
    group = store.group_by_name(name)
    if group is None:
        raise StoreError(f"no group named '{name.strip()}'", "see `kiosk groups list` or create it with `groups add`")
    return group


def _person(store: Store, name: str) -> User:
    user = store.user_by_name(name)
    if user is None:
        raise StoreError(f"no user named '{name.strip()}'", "see `kiosk users list`")
    return user


def _describe(store: Store, group: Group) -> dict[str, Any]:
    return {
        "id": group.id,
        "name": group.name,
        "members": [user.name for user in store.members(group.id)],
        "notes": store.count_notes(group.id),
    }


@groups_app.command("add")
@handle_errors
def add_cmd(name: str = typer.Argument(..., help="The new group's name."), as_json: bool = JsonOption) -> None:
    """Create a group (empty; add members next)."""
    with open_store(config()) as store:
        payload = _describe(store, store.add_group(name))
    emit(payload, as_json, lambda p: f"created group {p['name']} (id {p['id']})")


@groups_app.command("list")
@handle_errors
def list_cmd(as_json: bool = JsonOption) -> None:
    """Groups with their members and note counts."""
    with open_store(config()) as store:
        rows = [_describe(store, group) for group in store.list_groups()]

    def human(items: list[dict[str, Any]]) -> str:
        if not items:
            return "no groups (kiosk groups add NAME)"
        return "\n".join(f"{r['name']}: {', '.join(r['members']) or 'no members'} · {r['notes']} notes" for r in items)

    emit(rows, as_json, human)


@groups_app.command("add-member")
@handle_errors
def add_member_cmd(
    group: str = typer.Argument(..., help="The group."),
    user: str = typer.Argument(..., help="An enrolled person."),
    as_json: bool = JsonOption,
) -> None:
    """Let a person read (and write) the group's notes whenever they are verified."""
    with open_store(config()) as store:
        found = _group(store, group)
        store.add_member(found.id, _person(store, user).id)
        payload = _describe(store, found)
    emit(payload, as_json, lambda p: f"{user.strip()} is a member of {p['name']} ({', '.join(p['members'])})")


@groups_app.command("remove-member")
@handle_errors
def remove_member_cmd(
    group: str = typer.Argument(..., help="The group."),
    user: str = typer.Argument(..., help="A member."),
    as_json: bool = JsonOption,
) -> None:
    """Stop a person reading the group's notes (the notes stay with the group)."""
    with open_store(config()) as store:
        found = _group(store, group)
        person = _person(store, user)
        if person.id not in {member.id for member in store.members(found.id)}:
            raise StoreError(f"{person.name} is not a member of {found.name}", "see `kiosk groups list`")
        store.remove_member(found.id, person.id)
        payload = _describe(store, found)
    emit(payload, as_json, lambda p: f"{person.name} left {p['name']}")


@groups_app.command("delete")
@handle_errors
def delete_cmd(
    group: str = typer.Argument(..., help="The group."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = JsonOption,
) -> None:
    """Delete a group with its memberships and all its notes."""
    with open_store(config()) as store:
        found = _group(store, group)
        notes = store.count_notes(found.id)
        if not yes and not typer.confirm(f"Delete group {found.name} with {notes} note(s)? This cannot be undone."):
            fail("nothing deleted", code=1)
        store.delete_group(found.id)
    emit({"deleted": found.name, "notes_deleted": notes}, as_json, lambda p: f"deleted group {p['deleted']}")


def register(app: typer.Typer) -> None:
    app.add_typer(groups_app, name="groups")
