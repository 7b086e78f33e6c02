"""The seam between the shared store logic and a database driver: a transaction that runs statements, and the
few words each database spells its own way (its dialect).

Shared statements are written with `?` placeholders (DB-API "qmark") in SQL that SQLite and PostgreSQL both
accept; the PostgreSQL adapter turns the placeholders into psycopg's `%s`. What differs between the two
databases is a field of `Dialect`, not a branch in the shared code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

ALL = None
"""The owners of an administrative call that names none: every owner's rows (on PostgreSQL, those of the gate
scope in force, if any)."""

Owners = Sequence[int] | None
Statement = tuple[str, tuple[Any, ...]]


class Tx(Protocol):
    """One open transaction (on SQLite, a read runs on the locked connection without one)."""

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def one(self, statement: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...

    def run(self, statement: str, params: Sequence[Any] = ()) -> int:
        """Run a statement that returns no rows; returns how many rows it changed."""
        ...


@dataclass(frozen=True)
class Dialect:
    """How one database spells what the shared statements need beyond the SQL both accept."""

    in_ids: str
    """`column` in a bound list of ids, with `{}` for the column."""
    bind_ids: Callable[[Sequence[int]], Any]
    bind_vector: Callable[[np.ndarray], Any]
    load_vector: Callable[[Any], np.ndarray]
    greatest: str
    """The two-argument maximum function."""
    no_limit: Any
    """The LIMIT value that means no limit."""
    note_sealing: str
    """Columns of `notes n` the sealed-row format reads besides content, keywords, tags and context."""
    history_sealing: str
    """Columns of `history h` the sealed-row format reads besides before and after."""
    clear_note: str
    """Condition on `notes n`: a field is still stored in clear."""
    clear_history: str
    """Condition on `history h`: a field is still stored in clear."""
    insert_note_suffix: str
    """Ends the note INSERT: returns the new id, or no row when the idempotency key is taken."""
    expressions: Mapping[str, str] = field(default_factory=dict)
    """Column -> value expression where a column is not written as a plain `?`."""
    owner_columns: bool = False
    """Links and history carry their owner's id (the column row-level security tests)."""
    row_locks: bool = False
    """SELECT ... FOR UPDATE / SHARE locks rows (PostgreSQL); SQLite serialises writers instead."""

    def ids(self, column: str) -> str:
        return self.in_ids.format(column)

    def lock(self, mode: str, of: str = "") -> str:
        """` FOR <mode> [OF <alias>]` where the database locks rows, else nothing."""
        if not self.row_locks:
            return ""
        return f" FOR {mode}" + (f" OF {of}" if of else "")


def owner_list(owner_ids: Sequence[int]) -> list[int]:
    return sorted({int(o) for o in owner_ids})


def insert(table: str, values: Mapping[str, Any], dialect: Dialect, suffix: str = "") -> Statement:
    """INSERT of `values` (column -> value) into `table`."""
    marks = ", ".join(dialect.expressions.get(column, "?") for column in values)
    return f"INSERT INTO {table} ({', '.join(values)}) VALUES ({marks}){suffix}", tuple(values.values())


def update(
    table: str,
    values: Mapping[str, Any],
    dialect: Dialect,
    where: str,
    params: Sequence[Any],
    expressions: Mapping[str, str] | None = None,
) -> Statement:
    """UPDATE `table` SET `values` WHERE `where` (its `?` bound to `params`)."""
    spelled = {**dialect.expressions, **(expressions or {})}
    sets = ", ".join(f"{column} = {spelled.get(column, '?')}" for column in values)
    return f"UPDATE {table} SET {sets} WHERE {where}", (*values.values(), *params)
