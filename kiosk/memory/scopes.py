"""Who may read a note: its scope (personal, group:NAME or public), parsed and resolved to an owner id.

Groups and the public scope are pseudo-owners in the store's owner id space (see schema `_v5_scopes`), so
a note's scope is simply the kind of its owner, and owner-restricted search covers every scope alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kiosk.errors import DataError, StoreError
from kiosk.memory.store import Store

ScopeKind = Literal["personal", "group", "public"]
SCOPE_KINDS: tuple[ScopeKind, ...] = ("personal", "group", "public")
GROUP_PREFIX = "group:"
SCOPE_HINT = "write personal, group:NAME or public"


@dataclass(frozen=True)
class Scope:
    kind: ScopeKind
    group: str | None = None

    def __str__(self) -> str:
        return f"{GROUP_PREFIX}{self.group}" if self.kind == "group" else self.kind


PERSONAL = Scope("personal")
PUBLIC = Scope("public")


def parse_scope(text: str) -> Scope:
    """'personal' | 'group:NAME' | 'public' (case-insensitive keyword); anything else is a clear DataError."""
    raw = text.strip()
    keyword, colon, name = raw.partition(":")
    keyword = keyword.strip().casefold()
    if keyword == "group":
        if not colon or not name.strip():
            raise DataError("the group scope needs the group's name", "write group:NAME, e.g. group:family")
        return Scope("group", name.strip())
    if colon:
        raise DataError(f"unknown scope '{raw}'", SCOPE_HINT)
    if keyword == "personal":
        return PERSONAL
    if keyword == "public":
        return PUBLIC
    raise DataError(f"unknown scope '{raw}'", SCOPE_HINT)


def scope_kind(scope: str) -> ScopeKind:
    """The kind of a stored note's scope string ('personal', 'group:NAME', 'public')."""
    if scope.startswith(GROUP_PREFIX):
        return "group"
    if scope in ("personal", "public"):
        return scope  # type: ignore[return-value]
    raise DataError(f"unknown scope '{scope}'", SCOPE_HINT)


def public_owner(store: Store) -> int:
    """The public scope's owner id; a clear error when the store cannot tell (a fleet terminal that has been
    offline since it started has never seen it)."""
    owner = store.public_owner_id()
    if owner is None:
        raise StoreError(
            "the public scope is not known on this terminal yet (the fleet database was never reached)",
            "retry when the fleet database is reachable",
        )
    return owner


def owner_for(store: Store, scope: Scope, author_id: int) -> int:
    """The owner id a note of `author_id` in `scope` is stored under; the author must belong to the group."""
    if scope.kind == "personal":
        return author_id
    if scope.kind == "public":
        return public_owner(store)
    assert scope.group is not None
    group = store.group_by_name(scope.group)
    if group is None:
        raise StoreError(f"no group named '{scope.group}'", f"create it first: kiosk groups add {scope.group}")
    if author_id not in {user.id for user in store.members(group.id)}:
        author = store.get_user(author_id)
        who = author.name if author else f"user {author_id}"
        raise StoreError(
            f"{who} is not a member of group '{scope.group}'",
            f"add them first: kiosk groups add-member {scope.group} {who}",
        )
    return group.id
