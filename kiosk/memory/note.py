"""The records of long-term memory: users, their biometric templates, and A-Mem notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

EMBEDDING_DIM = 384


def utc_now() -> datetime:
    return datetime.now(UTC)


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def to_epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (UTC)")
    return moment.timestamp()


@dataclass(frozen=True)
class Link:
    target_id: int
    kind: str


@dataclass(frozen=True)
class User:
    id: int
    name: str
    created_at: datetime


@dataclass(frozen=True)
class Group:
    """A named set of enrolled people (a family, a ward, a team) whose verified members share its notes."""

    id: int
    name: str
    created_at: datetime


@dataclass(frozen=True)
class Template:
    id: int
    user_id: int
    modality: str
    vector: np.ndarray
    model_sha256: str
    created_at: datetime


@dataclass(frozen=True)
class HistoryEntry:
    """One change to a note (an update or an evolution step), with the fields before and after."""

    note_id: int
    at: datetime
    reason: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass
class Note:
    """An A-Mem note m_i: content, time, keywords, tags, context, embedding and links, owned by one user."""

    id: int | None
    owner_id: int
    modality: str
    content: str
    timestamp: datetime
    keywords: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    context: str = ""
    embedding: np.ndarray | None = None
    links: list[Link] = field(default_factory=list)
    source: str = "chat"
    source_ref: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    sensitivity: str | None = None
    """A sensitive category (kiosk.memory.sensitivity.CATEGORIES) or None; sensitive notes need stronger proof."""

    scope: str = "personal"
    """Read-only, set by the store from the owner: 'personal', 'group:NAME' or 'public'."""
    author_id: int | None = None
    """Who said it, when the owner is a group or the public scope (None: the owner themself)."""
    last_used_at: datetime | None = None
    """When the note was last retrieved and used (None: never; its age counts from `timestamp`)."""
    reinforcements: int = 0
    archived_at: datetime | None = None
    """Set when its strength fell below the floor: out of retrieval, still listed, restorable."""

    @property
    def sensitive(self) -> bool:
        return self.sensitivity is not None

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def speaker_id(self) -> int:
        """The user who said it: its author, or its owner for a personal note."""
        return self.author_id if self.author_id is not None else self.owner_id

    def embedding_text(self) -> str:
        """What e_i encodes: content, keywords, tags and context together (A-Mem)."""
        parts = [self.content]
        if self.keywords:
            parts.append("Keywords: " + ", ".join(self.keywords))
        if self.tags:
            parts.append("Tags: " + ", ".join(self.tags))
        if self.context:
            parts.append("Context: " + self.context)
        return "\n".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner_id": self.owner_id,
            "modality": self.modality,
            "content": self.content,
            "timestamp": self.timestamp.isoformat(),
            "keywords": list(self.keywords),
            "tags": list(self.tags),
            "context": self.context,
            "links": [{"target_id": link.target_id, "kind": link.kind} for link in self.links],
            "source": self.source,
            "source_ref": self.source_ref,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "sensitivity": self.sensitivity,
            "scope": self.scope,
            "author_id": self.author_id,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
            "reinforcements": self.reinforcements,
            "archived_at": self.archived_at.isoformat() if self.archived_at else None,
        }
