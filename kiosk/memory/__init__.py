"""Long-term memory: A-Mem notes per user on SQLite + sqlite-vec."""

from kiosk.memory.note import EMBEDDING_DIM, HistoryEntry, Link, Note, Template, User
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.memory.store import Store

__all__ = ["EMBEDDING_DIM", "HistoryEntry", "Link", "Note", "SqliteStore", "Store", "Template", "User"]
