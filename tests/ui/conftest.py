"""UI fixtures: a window around any KioskServices, loaded off the GUI thread as in the app, and screenshots."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _prefer_installed_packaging() -> None:
    """tests/packaging/ (a test package) shadows the `packaging` distribution that matplotlib and mediapipe
    import, because pytest puts tests/ first on sys.path. Import the installed one for the UI tests."""
    loaded = sys.modules.get("packaging")
    if loaded is not None and "site-packages" in str(getattr(loaded, "__file__", "")):
        return
    tests_dir = Path(__file__).resolve().parents[1]
    shadowing = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "packaging"}
    saved = list(sys.path)
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != tests_dir]
    try:
        importlib.import_module("packaging.version")
    except ImportError:
        sys.modules.update(shadowing)
    finally:
        sys.path[:] = saved


_prefer_installed_packaging()
from PySide6.QtWidgets import QWidget  # noqa: E402

from kiosk.app.views import KioskServices, Progress  # noqa: E402
from kiosk.config import PROJECT_ROOT, KioskConfig  # noqa: E402
from kiosk.ui.app import KioskWindow  # noqa: E402

from .fakes import FakeServices  # noqa: E402

SCREENSHOTS = PROJECT_ROOT / "artifacts" / "screenshots"
KIOSK_SIZE = (1920, 1080)
DESKTOP_SIZE = (1280, 800)


@pytest.fixture(scope="session", autouse=True)
def gui_thread_gc(qapp) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """As in the app: cyclic garbage (closed windows of earlier tests) is collected on the GUI thread only."""
    from kiosk.ui.gui_thread_gc import GuiThreadGarbageCollector

    collector = GuiThreadGarbageCollector(parent=qapp)
    yield
    collector.stop()


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

        return show_loaded(qtbot, windows, config or ui_config, loader, desktop)

    yield make
    for window in windows:
        window.shutdown()


def show_loaded(  # type: ignore[no-untyped-def]
    qtbot,
    windows: list[KioskWindow],
    config: KioskConfig,
    loader: Callable[[Progress], KioskServices],
    desktop: bool = False,
) -> KioskWindow:
    """A kiosk window on screen at its real size, once `loader` has given it its services; kept in `windows`
    for the fixture to shut down."""
    window = KioskWindow(config, loader, desktop)
    qtbot.addWidget(window)
    window.resize(*(DESKTOP_SIZE if desktop else KIOSK_SIZE))
    window.show()
    windows.append(window)
    with qtbot.waitSignal(window.ready, timeout=60_000):
        window.load()
    return window


def ask_after_badge(qtbot, window: KioskWindow, badge: str, question: str):  # type: ignore[no-untyped-def]
    """Wait until the badge shows `badge` (the person is in view), then type and send like a finger would; the
    AnswerView (or error message) the answer ended with."""
    from PySide6.QtCore import Qt

    qtbot.waitUntil(lambda: badge in window.main.badge.text(), timeout=30_000)
    with qtbot.waitSignal(window.main.answer_done, timeout=60_000) as blocker:
        window.main.type_with_keyboard(question)
        qtbot.mouseClick(window.main.keyboard.enter_key, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def save_screenshot(widget: QWidget, name: str, folder: Path = SCREENSHOTS) -> Path:
    from PySide6.QtWidgets import QApplication

    for _ in range(3):  # let pending layouts settle so the picture shows what a person would see
        QApplication.processEvents()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    assert widget.grab().save(str(path)), f"could not save {path}"
    return path
