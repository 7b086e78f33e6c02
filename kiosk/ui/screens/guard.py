"""How an admin tab asks for a destructive action: the screen runs it now, or after the liveness check."""

from __future__ import annotations

from collections.abc import Callable

from kiosk.security.admin_access import AdminAction

Guard = Callable[[AdminAction, Callable[[], None]], None]
