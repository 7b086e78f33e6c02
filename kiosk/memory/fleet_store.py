"""What a terminal opens for the fleet store: PostgresStore plus the offline queue.

While the database is reachable every call goes to it (after pushing any queued notes, oldest first).
When it is not: `add_note` queues the note locally with its idempotency key and returns it without an id;
the gate keeps working from the last users, templates, groups, memberships and public owner seen (so a
person's scoped pool, and the owner of a group or public note, resolve offline); reading or changing stored notes raises
StoreUnavailable (a clear message, nothing is guessed). Reconnection is tried at most every
`retry_after_s`, so an offline terminal does not wait on a connect timeout at every call.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from kiosk.errors import StoreError
from kiosk.memory.checks import validate_new_note
from kiosk.memory.note import Group, HistoryEntry, Link, Note, Template, User
from kiosk.memory.offline_queue import OfflineQueue
from kiosk.memory.postgres_store import PostgresStore, StoreUnavailable
from kiosk.security.sealing import MasterKey

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_AFTER_S = 5.0


class FleetStore:
    """`Store` for one terminal of the fleet: the shared PostgreSQL store with a local offline queue."""

    max_k = PostgresStore.max_k

    def __init__(
        self,
        url: str,
        queue_path: Path,
        *,
        retry_after_s: float = RETRY_AFTER_S,
        master_key: MasterKey | None = None,
        connect: Callable[[str], PostgresStore] | None = None,
    ) -> None:
        """`master_key`: the fleet's master key when notes are sealed at rest (security.encrypt_at_rest)."""
        self.url = url
        self.queue = OfflineQueue(queue_path, master_key)
        self.retry_after_s = retry_after_s
        self._connect_remote = connect or (lambda target: PostgresStore(target, master_key=master_key))
        self._remote: PostgresStore | None = None
        self._next_attempt = 0.0
        self._sync_lock = threading.Lock()
        self._cached_scopes: dict[object, object] = {}
        try:
            self._online()
        except StoreUnavailable as exc:
            log.warning("fleet store offline at start (%s); notes will be queued in %s", exc.message, queue_path)

    # ---- connection and sync -------------------------------------------------------------------
    def _online(self) -> PostgresStore:
        if self._remote is None:
            if time.monotonic() < self._next_attempt:
                raise StoreUnavailable("fleet memory database is unreachable", "retrying shortly; notes are queued")
            try:
                self._remote = self._connect_remote(self.url)
            except StoreUnavailable:
                self._next_attempt = time.monotonic() + self.retry_after_s
                raise
        return self._remote

    def _call(self, work: Callable[[PostgresStore], T]) -> T:
        remote = self._online()
        try:
            if len(self.queue):
                self._push(remote)
            return work(remote)
        except StoreUnavailable:
            self._next_attempt = time.monotonic() + self.retry_after_s
            self._remote = None
            remote.close()
            raise

    def _push(self, remote: PostgresStore) -> int:
        with self._sync_lock:
            sent = 0
            for key, note in self.queue.pending():
                try:
                    remote.add_note(note, idempotency_key=key)
                except StoreUnavailable:
                    raise
                except StoreError as exc:  # its owner was deleted meanwhile: erasure wins over the queue
                    log.warning("queued note %s dropped at sync: %s", key, exc.one_line())
                self.queue.remove(key)  # a crash before this line re-sends the key: stored once all the same
                sent += 1
            if sent:
                log.info("synced %d queued notes to the fleet store", sent)
            return sent

    def sync(self) -> int:
        """Push queued notes now; returns how many were sent (StoreUnavailable while still offline)."""
        before = len(self.queue)
        self._call(lambda remote: None)  # every call pushes the queue first
        return before - len(self.queue)

    @contextmanager
    def owner_scope(self, owner_ids: Sequence[int]) -> Iterator[None]:
        """The gate's owners for the calls inside (row-level security), while connected."""
        remote = self._remote
        if remote is None:
            yield
            return
        with remote.owner_scope(owner_ids):
            yield

    def _cache(self, what: object, value: object, write: Callable[[], None]) -> None:
        """Write a scope answer to the queue file only when it changed (the gate asks at every question)."""
        if self._cached_scopes.get(what) != value:
            write()
            self._cached_scopes[what] = value

    @property
    def pending(self) -> int:
        return len(self.queue)

    def close(self) -> None:
        if self._remote is not None:
            self._remote.close()
        self.queue.close()

    def __enter__(self) -> FleetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- notes: queued when offline ------------------------------------------------------------
    def add_note(self, note: Note) -> Note:
        validate_new_note(note)
        key = uuid.uuid4().hex
        try:
            return self._call(lambda remote: remote.add_note(note, idempotency_key=key))
        except StoreUnavailable as exc:
            self.queue.put(key, note)
            log.warning("fleet store unreachable (%s): note queued locally (%d pending)", exc.message, self.pending)
            return dataclasses.replace(note, id=None)

    # ---- the gate: served from the local cache when offline ------------------------------------
    def list_users(self) -> list[User]:
        try:
            users = self._call(lambda remote: remote.list_users())
        except StoreUnavailable:
            return self.queue.cached_users()
        self.queue.cache_users(users)
        return users

    def get_user(self, user_id: int) -> User | None:
        try:
            return self._call(lambda remote: remote.get_user(user_id))
        except StoreUnavailable:
            return next((u for u in self.queue.cached_users() if u.id == user_id), None)

    def user_by_name(self, name: str) -> User | None:
        try:
            return self._call(lambda remote: remote.user_by_name(name))
        except StoreUnavailable:
            return next((u for u in self.queue.cached_users() if u.name == name.strip()), None)

    def templates(self, modality: str | None = None) -> list[Template]:
        try:
            found = self._call(lambda remote: remote.templates(modality))
        except StoreUnavailable:
            return self.queue.cached_templates(modality)
        self.queue.cache_templates(found, modality)
        return found

    # ---- everything else needs the database ----------------------------------------------------
    def add_user(self, name: str) -> User:
        return self._call(lambda remote: remote.add_user(name))

    def delete_user(self, user_id: int) -> None:
        self._call(lambda remote: remote.delete_user(user_id))

    def set_templates(self, user_id: int, modality: str, vectors: np.ndarray, model_sha256: str) -> list[Template]:
        return self._call(lambda remote: remote.set_templates(user_id, modality, vectors, model_sha256))

    def get_note(self, note_id: int) -> Note | None:
        return self._call(lambda remote: remote.get_note(note_id))

    def update_note(self, note: Note, reason: str) -> Note:
        return self._call(lambda remote: remote.update_note(note, reason))

    def delete_note(self, note_id: int) -> None:
        self._call(lambda remote: remote.delete_note(note_id))

    def list_notes(self, owner_id: int, limit: int | None = None, offset: int = 0) -> list[Note]:
        return self._call(lambda remote: remote.list_notes(owner_id, limit, offset))

    def get_notes(self, ids: Sequence[int]) -> list[Note]:
        return self._call(lambda remote: remote.get_notes(ids))

    def count_notes(self, owner_id: int | None = None) -> int:
        return self._call(lambda remote: remote.count_notes(owner_id))

    def source_refs(self, owner_id: int) -> set[str]:
        return self._call(lambda remote: remote.source_refs(owner_id))

    def knn(self, owner_ids: Sequence[int], query: np.ndarray, k: int) -> list[tuple[int, float]]:
        return self._call(lambda remote: remote.knn(owner_ids, query, k))

    def lexical(self, owner_ids: Sequence[int], query_text: str, k: int) -> list[tuple[int, float]]:
        return self._call(lambda remote: remote.lexical(owner_ids, query_text, k))

    def owner_matrix(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._call(lambda remote: remote.owner_matrix(owner_ids))

    def owner_version(self, owner_id: int) -> int:
        return self._call(lambda remote: remote.owner_version(owner_id))

    def add_link(self, a: int, b: int, kind: str) -> None:
        self._call(lambda remote: remote.add_link(a, b, kind))

    def links(self, note_id: int) -> list[Link]:
        return self._call(lambda remote: remote.links(note_id))

    def history(self, note_id: int) -> list[HistoryEntry]:
        return self._call(lambda remote: remote.history(note_id))

    def mark_sensitivity(self, note_id: int, sensitivity: str | None, by: str) -> Note:
        return self._call(lambda remote: remote.mark_sensitivity(note_id, sensitivity, by))

    def sensitive_note_ids(self, owner_ids: Sequence[int]) -> set[int]:
        return self._call(lambda remote: remote.sensitive_note_ids(owner_ids))

    def revoke_templates(self, user_id: int, modality: str | None = None) -> int:
        return self._call(lambda remote: remote.revoke_templates(user_id, modality))

    def key_generation(self, user_id: int) -> int:
        return self._call(lambda remote: remote.key_generation(user_id))

    # ---- scopes: what the gate's pool needs is served from the local cache when offline -------------
    def add_group(self, name: str) -> Group:
        return self._call(lambda remote: remote.add_group(name))

    def get_group(self, group_id: int) -> Group | None:
        return next((g for g in self.list_groups() if g.id == group_id), None)

    def group_by_name(self, name: str) -> Group | None:
        try:
            group = self._call(lambda remote: remote.group_by_name(name))
        except StoreUnavailable:
            return next((g for g in self.queue.cached_groups() if g.name == name.strip()), None)
        if group is not None:
            self._cache(
                ("group", group.id),
                group,
                lambda: self.queue.cache_groups([*[g for g in self.queue.cached_groups() if g.id != group.id], group]),
            )
        return group

    def list_groups(self) -> list[Group]:
        try:
            groups = self._call(lambda remote: remote.list_groups())
        except StoreUnavailable:
            return self.queue.cached_groups()
        self._cache("groups", groups, lambda: self.queue.cache_groups(groups))
        return groups

    def delete_group(self, group_id: int) -> None:
        self._call(lambda remote: remote.delete_group(group_id))

    def add_member(self, group_id: int, user_id: int) -> None:
        self._call(lambda remote: remote.add_member(group_id, user_id))

    def remove_member(self, group_id: int, user_id: int) -> None:
        self._call(lambda remote: remote.remove_member(group_id, user_id))

    def members(self, group_id: int) -> list[User]:
        try:
            users = self._call(lambda remote: remote.members(group_id))
        except StoreUnavailable:
            ids = set(self.queue.cached_member_ids(group_id))
            return [u for u in self.queue.cached_users() if u.id in ids]
        self._cache(("members", group_id), users, lambda: self.queue.cache_members(group_id, users))
        return users

    def groups_of(self, user_id: int) -> list[Group]:
        try:
            groups = self._call(lambda remote: remote.groups_of(user_id))
        except StoreUnavailable:
            return self.queue.cached_groups_of(user_id)
        self._cache(("groups_of", user_id), groups, lambda: self.queue.cache_groups_of(user_id, groups))
        return groups

    def public_owner_id(self) -> int | None:
        """The public owner; offline, the last one seen (None before this terminal ever saw it)."""
        try:
            owner = self._call(lambda remote: remote.public_owner_id())
        except StoreUnavailable:
            return self.queue.cached_public_owner()
        self._cache("public", owner, lambda: self.queue.cache_public_owner(owner))
        return owner

    # ---- strength and archive --------------------------------------------------------------------------
    def retention_state(self, owner_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._call(lambda remote: remote.retention_state(owner_ids))

    def reinforce(self, note_ids: Sequence[int], at: datetime) -> None:
        self._call(lambda remote: remote.reinforce(note_ids, at))

    def archive_notes(self, note_ids: Sequence[int], at: datetime) -> int:
        return self._call(lambda remote: remote.archive_notes(note_ids, at))

    def restore_note(self, note_id: int, at: datetime) -> Note:
        return self._call(lambda remote: remote.restore_note(note_id, at))
