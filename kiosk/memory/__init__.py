"""Long-term memory: A-Mem notes per owner, behind narrow ports (ports.py), on SQLite + sqlite-vec or on the
fleet's PostgreSQL + pgvector (one shared SQL logic, kiosk/memory/sql/; the store is chosen in open.py)."""

from kiosk.memory.note import EMBEDDING_DIM, HistoryEntry, Link, Note, Template, User
from kiosk.memory.sqlite_store import SqliteStore
from kiosk.memory.store import Store

__all__ = ["EMBEDDING_DIM", "HistoryEntry", "Link", "Note", "SqliteStore", "Store", "Template", "User"]
