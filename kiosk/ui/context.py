"""What every screen shares: config, look, services (once loaded), admin access (PIN + liveness) and the audit log."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QThreadPool

from kiosk.config import KioskConfig
from kiosk.security.admin_access import AdminAccess
from kiosk.security.admin_pin import AdminPin
from kiosk.security.audit import AuditLog, audit_log_for
from kiosk.ui.services import KioskServices
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
        audit = audit_log_for(config)
        admin_pin = AdminPin(
            config.paths.data_dir / "admin_pin.json",
            config.ui.admin_pin_attempts,
            config.ui.admin_lockout_s,
            max_lockout_s=max(config.security.backoff_max_s, config.ui.admin_lockout_s),
        )
        return cls(
            config=config,
            metrics=metrics,
            desktop=desktop,
            audit=audit,
            admin_pin=admin_pin,
            admin_access=AdminAccess.for_config(config, admin_pin, audit),
            pool=pool,
        )

    def require_services(self) -> KioskServices:
        if self.services is None:
            raise RuntimeError("services are not loaded yet")
        return self.services
