"""UI fixtures: a window around any KioskServices, loaded off the GUI thread as in the app, and screenshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QWidget

from kiosk.config import PROJECT_ROOT, KioskConfig
from kiosk.ui.app import KioskWindow
from kiosk.ui.services import KioskServices, Progress

from .fakes import FakeServices

SCREENSHOTS = PROJECT_ROOT / "artifacts" / "screenshots"
KIOSK_SIZE = (1920, 1080)
DESKTOP_SIZE = (1280, 800)


@pytest.fixture()
def ui_config(config: KioskConfig, tmp_path: Path) -> KioskConfig:
    cfg = config.model_copy(deep=True)
    cfg.paths.calibration_dir = tmp_path / "calibration"
    cfg.ui.admin_lockout_s = 30.0
    cfg.ui.admin_pin_attempts = 3
    return cfg


@pytest.fixture()
def fake() -> FakeServices:
    return FakeServices()


WindowFactory = Callable[..., KioskWindow]


@pytest.fixture()
def make_window(qtbot, ui_config: KioskConfig) -> Iterator[WindowFactory]:  # type: ignore[no-untyped-def]
    windows: list[KioskWindow] = []

    def make(services: KioskServices, desktop: bool = False, config: KioskConfig | None = None) -> KioskWindow:
        def loader(progress: Progress) -> KioskServices:
            progress(0.5, "Loading")
            return services

        window = KioskWindow(config or ui_config, loader, desktop)
        qtbot.addWidget(window)
        window.resize(*(DESKTOP_SIZE if desktop else KIOSK_SIZE))
        window.show()
        windows.append(window)
        with qtbot.waitSignal(window.ready, timeout=60_000):
            window.load()
        return window

    yield make
    for window in windows:
        window.shutdown()


def save_screenshot(widget: QWidget, name: str, folder: Path = SCREENSHOTS) -> Path:
    from PySide6.QtWidgets import QApplication

    for _ in range(3):  # let pending layouts settle so the picture shows what a person would see
        QApplication.processEvents()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    assert widget.grab().save(str(path)), f"could not save {path}"
    return path
