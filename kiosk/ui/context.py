"""What every screen shares: config, look, services (once loaded), admin access (PIN + liveness) and the audit log."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QThreadPool

from kiosk.app.build import admin_guard
from kiosk.app.views import KioskServices
from kiosk.config import KioskConfig
from kiosk.security.admin_access import AdminAccess
from kiosk.security.admin_pin import AdminPin
from kiosk.security.audit import AuditLog
from kiosk.ui.theme import Metrics


@dataclass
class AppContext:
    config: KioskConfig
    metrics: Metrics
    desktop: bool
    audit: AuditLog
    admin_pin: AdminPin
    admin_access: AdminAccess
    services: KioskServices | None = None
    pool: QThreadPool = field(default_factory=QThreadPool)

    @classmethod
    def create(cls, config: KioskConfig, metrics: Metrics, desktop: bool) -> AppContext:
        pool = QThreadPool()
        pool.setMaxThreadCount(4)
        guard = admin_guard(config)
        return cls(
            config=config,
            metrics=metrics,
            desktop=desktop,
            audit=guard.audit,
            admin_pin=guard.pin,
            admin_access=guard.access,
            pool=pool,
        )

    def require_services(self) -> KioskServices:
        if self.services is None:
            raise RuntimeError("services are not loaded yet")
        return self.services
