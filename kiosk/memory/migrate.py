"""Move a terminal's SQLite memory into the fleet store: users (with templates), groups and memberships, the
public scope, notes (with scope, author, strength, archive state and sensitivity), links and history.

Resumable and idempotent: every note is imported under a key derived from what it is (owner name, creation
time, content), so running the migration again (after an interruption, or twice by mistake) stores nothing
twice. A user whose name already exists in the fleet store is merged into (that person was enrolled at
another terminal); their fleet templates are kept. Groups are matched by name the same way, and the public
scope of the terminal joins the fleet's one public scope. The report's verification counts what the fleet
store holds of the source, after the copy, with queries of its own.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kiosk.memory.note import Note, to_epoch
from kiosk.memory.postgres_store import PostgresStore
from kiosk.memory.sqlite_store import SqliteStore

Progress = Callable[[int, int], None]
PAGE = 500
PUBLIC_OWNER_NAME = "scope:public"


@dataclass
class MigrationReport:
    users_created: list[str] = field(default_factory=list)
    users_merged: list[str] = field(default_factory=list)
    groups_created: list[str] = field(default_factory=list)
    groups_merged: list[str] = field(default_factory=list)
    public_notes: int = 0
    notes_total: int = 0
    notes_copied: int = 0
    notes_already_there: int = 0
    links_total: int = 0
    memberships_total: int = 0
    verified_notes: int = 0
    verified_links: int = 0
    verified_memberships: int = 0

    @property
    def verified(self) -> bool:
        return (
            self.verified_notes == self.notes_total
            and self.verified_links == self.links_total
            and self.verified_memberships == self.memberships_total
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verified": self.verified}


def note_key(owner_name: str, note: Note) -> str:
    """`owner_name`: a person's name, 'group:NAME' for a group's notes, 'scope:public' for public ones."""
    assert note.created_at is not None
    identity = f"{owner_name}\x1f{to_epoch(note.created_at)!r}\x1f{note.source_ref or ''}\x1f{note.content}"
    return "migrated:" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]


def migrate(source: SqliteStore, target: PostgresStore, progress: Progress | None = None) -> MigrationReport:
    report = MigrationReport()
    report.notes_total = source.count_notes()
    people: dict[int, int] = {}  # source user id -> fleet user id (authors are mapped through it too)
    owners: list[tuple[int, str, int]] = []  # (source owner id, key name, fleet owner id)
    for user in source.list_users():
        existing = target.user_by_name(user.name)
        if existing is None:
            fleet_user = target.add_user(user.name)
            report.users_created.append(user.name)
            _copy_templates(source, target, user.id, fleet_user.id)
        else:
            fleet_user = existing
            report.users_merged.append(user.name)
        people[user.id] = fleet_user.id
        owners.append((user.id, user.name, fleet_user.id))
    memberships: list[tuple[int, int]] = []  # (fleet group id, fleet user id)
    for group in source.list_groups():
        fleet_group = target.group_by_name(group.name)
        if fleet_group is None:
            fleet_group = target.add_group(group.name)
            report.groups_created.append(group.name)
        else:
            report.groups_merged.append(group.name)
        for member in source.members(group.id):
            target.add_member(fleet_group.id, people[member.id])
            memberships.append((fleet_group.id, people[member.id]))
        owners.append((group.id, f"group:{group.name}", fleet_group.id))
    public = source.existing_public_owner_id()
    if public is not None:
        report.public_notes = source.count_notes(public)
        if report.public_notes:
            owners.append((public, PUBLIC_OWNER_NAME, target.public_owner_id()))

    done = 0
    keys: dict[int, str] = {}
    new_ids: dict[int, int] = {}
    pairs: set[tuple[int, int]] = set()
    for owner_id, name, fleet_owner in owners:
        offset = 0
        while page := source.list_notes(owner_id, limit=PAGE, offset=offset):
            offset += len(page)
            for note in page:
                assert note.id is not None
                key = note_key(name, note)
                author = None if note.author_id is None else people.get(note.author_id)
                copy = dataclasses.replace(note, id=None, owner_id=fleet_owner, links=[], author_id=author)
                new_id, created = target.import_note(copy, key, source.history(note.id))
                report.notes_copied += created
                report.notes_already_there += not created
                keys[note.id], new_ids[note.id] = key, new_id
                pairs.update(tuple(sorted((note.id, link.target_id))) for link in note.links)  # type: ignore[misc]
                done += 1
                if progress:
                    progress(done, report.notes_total)
    for a, b in sorted(pairs):
        kind = next(link.kind for link in source.links(a) if link.target_id == b)
        target.add_link(new_ids[a], new_ids[b], kind)
    report.links_total = len(pairs)
    report.memberships_total = len(memberships)
    stored = target.keyed_notes(list(keys.values()))
    report.verified_notes = len(stored)
    report.verified_links = sum(
        1
        for a, b in pairs
        if any(link.target_id == stored.get(keys[b]) for link in target.links(stored.get(keys[a], -1)))
    )
    report.verified_memberships = sum(
        1 for group_id, user_id in memberships if any(user.id == user_id for user in target.members(group_id))
    )
    return report


def _copy_templates(source: SqliteStore, target: PostgresStore, old_id: int, new_id: int) -> None:
    by_modality: dict[str, list[np.ndarray]] = {}
    sha: dict[str, str] = {}
    for template in source.templates():
        if template.user_id == old_id:
            by_modality.setdefault(template.modality, []).append(template.vector)
            sha[template.modality] = template.model_sha256
    for modality, vectors in by_modality.items():
        target.set_templates(new_id, modality, np.stack(vectors), sha[modality])
