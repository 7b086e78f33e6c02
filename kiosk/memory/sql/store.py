"""The store both SQL adapters share: every port, each written once in its own module of this package."""

from kiosk.memory.sql.identities import IdentityRecords
from kiosk.memory.sql.notes import NoteRecords
from kiosk.memory.sql.sealing import SealingAtRest
from kiosk.memory.sql.search import SearchIndexes


class SqlStore(IdentityRecords, NoteRecords, SearchIndexes, SealingAtRest):
    """Every port of `kiosk.memory.store.Store` on an SQL database; an adapter subclasses it with its driver,
    its dialect, its sealed-row layout and the upkeep of its search indexes."""
