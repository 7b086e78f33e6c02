"""The identities port on SQL: people, groups and their members, the public scope, biometric templates.

Groups and the public scope are pseudo-owners (rows of `users` of another kind), so their notes live and are
searched like a person's; a person's templates are sealed with the person's data key.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from kiosk.errors import StoreError
from kiosk.memory.checks import group_name, person_name, refuse_look_alike_user, template_vectors
from kiosk.memory.note import Group, Template, User, from_epoch
from kiosk.memory.records import (
    GROUP,
    GROUP_PREFIX,
    PERSON,
    PUBLIC,
    PUBLIC_NAME,
    group_from_row,
    user_from_row,
    vector_from_blob,
)
from kiosk.memory.row_sealing import open_template, readable, template_aad
from kiosk.memory.sql.base import SqlBackend
from kiosk.memory.sql.tx import ALL, Tx, insert


class IdentityRecords(SqlBackend):
    # ---- people ------------------------------------------------------------------------------------
    def add_user(self, name: str) -> User:
        name = person_name(name)
        refuse_look_alike_user(name, [user.name for user in self.list_users()])
        now = time.time()
        user_id = self._add_owner(name, PERSON, now)
        if user_id is None:
            raise StoreError(f"user '{name}' already exists", "pick another name or delete that user first")
        return User(user_id, name, from_epoch(now))

    def get_user(self, user_id: int) -> User | None:
        rows = self._owner_rows(PERSON, "AND id = ?", (user_id,))
        return user_from_row(rows[0]) if rows else None

    def user_by_name(self, name: str) -> User | None:
        rows = self._owner_rows(PERSON, "AND name = ?", (name.strip(),))
        return user_from_row(rows[0]) if rows else None

    def list_users(self) -> list[User]:
        return [user_from_row(row) for row in self._owner_rows(PERSON, "ORDER BY id")]

    def delete_user(self, user_id: int) -> None:
        """Forget a user: every note, vector, lexical entry, link, history entry, template, membership and their
        data key, so none of it stays readable in the database.

        Every group and public note they wrote goes with them, erased the same way: forget-me covers what the
        person said in any scope (such a note would otherwise stay readable, without an author to find it by).
        """
        self._erase_owner(user_id, PERSON)

    # ---- groups and the public scope ---------------------------------------------------------------
    def add_group(self, name: str) -> Group:
        clean = group_name(name)
        now = time.time()
        group_id = self._add_owner(GROUP_PREFIX + clean, GROUP, now)
        if group_id is None:
            raise StoreError(f"group '{clean}' already exists", "pick another name")
        return Group(group_id, clean, from_epoch(now))

    def group_by_name(self, name: str) -> Group | None:
        rows = self._owner_rows(GROUP, "AND name = ?", (GROUP_PREFIX + name.strip(),))
        return group_from_row(rows[0]) if rows else None

    def get_group(self, group_id: int) -> Group | None:
        rows = self._owner_rows(GROUP, "AND id = ?", (group_id,))
        return group_from_row(rows[0]) if rows else None

    def list_groups(self) -> list[Group]:
        return [group_from_row(row) for row in self._owner_rows(GROUP, "ORDER BY name")]

    def delete_group(self, group_id: int) -> None:
        """Delete a group with its memberships and every note of the group (an admin's decision), erased as
        a user's notes are."""
        if self.get_group(group_id) is None:
            raise StoreError(f"no group with id {group_id}", "see `kiosk groups list`")
        self._erase_owner(group_id, GROUP)

    def add_member(self, group_id: int, user_id: int) -> None:
        def insert_member(tx: Tx) -> None:
            kinds = {
                int(owner): kind
                for owner, kind in tx.rows(
                    f"SELECT id, kind FROM users WHERE id IN (?, ?){self.dialect.lock('KEY SHARE')}",
                    (group_id, user_id),
                )
            }
            if kinds.get(group_id) != GROUP:
                raise StoreError(f"no group with id {group_id}", "see `kiosk groups list`")
            if kinds.get(user_id) != PERSON:
                raise StoreError(f"no user with id {user_id}", "enroll the person first")
            tx.run(
                "INSERT INTO group_members (group_id, user_id, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (group_id, user_id, time.time()),
            )
            self._bump(tx, user_id)

        self._writing(ALL, insert_member)

    def remove_member(self, group_id: int, user_id: int) -> None:
        def delete(tx: Tx) -> None:
            if tx.run("DELETE FROM group_members WHERE group_id = ? AND user_id = ?", (group_id, user_id)) == 0:
                raise StoreError(f"user {user_id} is not a member of group {group_id}", "see `kiosk groups list`")
            self._bump(tx, user_id)

        self._writing(ALL, delete)

    def members(self, group_id: int) -> list[User]:
        rows = self._reading(
            ALL,
            lambda tx: tx.rows(
                "SELECT u.id, u.name, u.created_at FROM group_members m JOIN users u ON u.id = m.user_id "
                "WHERE m.group_id = ? ORDER BY u.id",
                (group_id,),
            ),
        )
        return [user_from_row(row) for row in rows]

    def groups_of(self, user_id: int) -> list[Group]:
        rows = self._reading(
            ALL,
            lambda tx: tx.rows(
                "SELECT g.id, g.name, g.created_at FROM group_members m JOIN users g ON g.id = m.group_id "
                "WHERE m.user_id = ? ORDER BY g.name",
                (user_id,),
            ),
        )
        return [group_from_row(row) for row in rows]

    def existing_public_owner_id(self) -> int | None:
        """The pseudo-owner of public notes if one was ever made (never creates it: a read-only look)."""
        rows = self._owner_rows(PUBLIC)
        return int(rows[0][0]) if rows else None

    def public_owner_id(self) -> int:
        """The pseudo-owner of public notes (created on first use, once for every terminal of the database)."""
        existing = self.existing_public_owner_id()
        if existing is not None:
            return existing
        created = self._add_owner(PUBLIC_NAME, PUBLIC, time.time())
        if created is not None:
            return created
        existing = self.existing_public_owner_id()  # another connection created it meanwhile
        if existing is None:
            raise StoreError(f"the name '{PUBLIC_NAME}' is taken by another row", "rename that row")
        return existing

    # ---- templates ---------------------------------------------------------------------------------
    def set_templates(self, user_id: int, modality: str, vectors: np.ndarray, model_sha256: str) -> list[Template]:
        """Replace the user's templates of `modality`; notes and their ownership stay as they are."""
        rows = template_vectors(vectors, modality)
        now = time.time()

        def replace(tx: Tx) -> tuple[list[Template], int]:
            person = f"SELECT 1 FROM users WHERE id = ? AND kind = ?{self.dialect.lock('KEY SHARE')}"
            if tx.one(person, (user_id, PERSON)) is None:
                raise StoreError(f"no user with id {user_id}", "enroll the user first")
            replaced = tx.run("DELETE FROM templates WHERE user_id = ? AND modality = ?", (user_id, modality))
            if replaced:
                self._rekey(tx, user_id)  # re-enrollment: the old templates' key no longer opens anything
            cipher = self._write_key(tx, user_id)
            created = []
            for row in rows:
                template_id = self._next_id(tx, "templates")
                blob = row.tobytes()
                if cipher is not None:
                    blob = cipher.seal(blob, template_aad(template_id, user_id, modality))
                values = {
                    "id": template_id,
                    "user_id": user_id,
                    "modality": modality,
                    "dimension": int(row.shape[0]),
                    "vector": blob,
                    "model_sha256": model_sha256,
                    "created_at": now,
                }
                tx.run(*insert("templates", values, self.dialect))
                created.append(Template(template_id, user_id, modality, row, model_sha256, from_epoch(now)))
            self._bump(tx, user_id)
            return created, replaced

        created, replaced = self._writing([user_id], replace)
        if replaced:
            self._reclaim(full=False)
        return created

    def templates(self, modality: str | None = None) -> list[Template]:
        query = (
            "SELECT t.id, t.user_id, t.modality, t.vector, t.model_sha256, t.created_at, t.dimension, k.generation, "
            "k.wrapped FROM templates t LEFT JOIN user_keys k ON k.user_id = t.user_id"
        )
        params: tuple[Any, ...] = ()
        if modality is not None:
            query += " WHERE t.modality = ?"
            params = (modality,)
        rows = self._reading(ALL, lambda tx: tx.rows(query + " ORDER BY t.user_id, t.id", params))

        def read(row: tuple[Any, ...]) -> Template:
            template_id, user_id, kind, blob, sha, created, dimension, generation, wrapped = row
            owner = int(user_id)
            opener = self._opener(owner, generation, wrapped)
            vector = open_template(opener, int(template_id), owner, kind, bytes(blob), int(dimension))
            return Template(int(template_id), owner, kind, vector_from_blob(vector), sha, from_epoch(created))

        return list(readable(rows, read, "template"))  # a damaged template never locks out the others

    def revoke_templates(self, user_id: int, modality: str | None = None) -> int:
        """Revoke (delete) the user's templates of `modality` (all when None); their notes stay, unreachable by
        the gate until the person is enrolled again. Returns how many templates were revoked."""

        def revoke(tx: Tx) -> int:
            if modality is None:
                revoked = tx.run("DELETE FROM templates WHERE user_id = ?", (user_id,))
            else:
                revoked = tx.run("DELETE FROM templates WHERE user_id = ? AND modality = ?", (user_id, modality))
            self._bump(tx, user_id)
            return revoked

        revoked = self._writing([user_id], revoke)
        self._reclaim(full=False)
        return revoked

    # ---- owners ------------------------------------------------------------------------------------
    def _owner_rows(self, kind: str, where: str = "", params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        query = f"SELECT id, name, created_at FROM users WHERE kind = ? {where}"
        return self._reading(ALL, lambda tx: tx.rows(query, (kind, *params)))

    def _add_owner(self, name: str, kind: str, now: float) -> int | None:
        """A row of `users` (a person, a group or the public scope) with its data key; None if the name is taken."""

        def add(tx: Tx) -> int | None:
            if tx.one("SELECT 1 FROM users WHERE name = ?", (name,)) is not None:
                return None
            row = tx.one(
                "INSERT INTO users (name, created_at, kind) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
                (name, now, kind),
            )
            if row is None:  # another connection took the name meanwhile
                return None
            owner_id = int(row[0])
            self._write_key(tx, owner_id)
            self._bump(tx, owner_id)
            return owner_id

        return self._writing(ALL, add)

    def _erase_owner(self, owner_id: int, kind: str) -> None:
        def erase(tx: Tx) -> None:
            if kind == PERSON:
                self._erase_authored(tx, owner_id)
            self._unindex_owner(tx, owner_id)
            tx.run("DELETE FROM users WHERE id = ? AND kind = ?", (owner_id, kind))  # the rest cascades
            self._bump(tx, owner_id)

        # A person's shared notes live in groups' and the public partitions: the erasure must see every owner.
        self._writing(ALL if kind == PERSON else [owner_id], erase)
        if self._keys is not None:
            self._keys.forget_cached_keys()
        self._reclaim(full=True)

    def _erase_authored(self, tx: Tx, author_id: int) -> None:
        """Erase the group and public notes `author_id` wrote (before the author's row goes: its foreign key
        would otherwise only clear their author), with their index data, links and history."""
        d = self.dialect
        rows = tx.rows(f"SELECT id, owner_id FROM notes WHERE author_id = ?{d.lock('UPDATE')}", (author_id,))
        if not rows:
            return
        note_ids = [int(row[0]) for row in rows]
        self._unindex(tx, note_ids, erase=True)
        tx.run(f"DELETE FROM notes WHERE {d.ids('id')}", (d.bind_ids(note_ids),))  # links and history cascade
        for owner in sorted({int(row[1]) for row in rows}):
            self._bump(tx, owner)
