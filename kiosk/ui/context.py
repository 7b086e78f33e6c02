"""What every screen shares: config, look, services (once loaded), the admin PIN and the admin log."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QThreadPool

from kiosk.config import KioskConfig
from kiosk.ui.admin_log import AdminLog
from kiosk.ui.admin_pin import AdminPin
from kiosk.ui.services import KioskServices
from kiosk.ui.theme import Metrics


@dataclass
class AppContext:
    config: KioskConfig
    metrics: Metrics
    desktop: bool
    admin_log: AdminLog
    admin_pin: AdminPin
    services: KioskServices | None = None
    pool: QThreadPool = field(default_factory=QThreadPool)

    @classmethod
    def create(cls, config: KioskConfig, metrics: Metrics, desktop: bool) -> AppContext:
        pool = QThreadPool()
        pool.setMaxThreadCount(4)
        return cls(
            config=config,
            metrics=metrics,
            desktop=desktop,
            admin_log=AdminLog(config.paths.logs),
            admin_pin=AdminPin(
                config.paths.data_dir / "admin_pin.json", config.ui.admin_pin_attempts, config.ui.admin_lockout_s
            ),
            pool=pool,
        )

    def require_services(self) -> KioskServices:
        if self.services is None:
            raise RuntimeError("services are not loaded yet")
        return self.services
