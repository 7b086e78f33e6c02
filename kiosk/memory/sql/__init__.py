"""The store logic both SQL adapters share (SQLite: kiosk/memory/sqlite_store.py; PostgreSQL:
kiosk/memory/postgres_store.py), one module per port (identities, notes, history, search, sealing) on top of
the adapter's transactions and dialect (tx.py, base.py); store.py puts them together."""
