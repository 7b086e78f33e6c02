"""A numeric pad for the admin PIN; digits are shown as dots."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from kiosk.ui.theme import Metrics


class PinPad(QWidget):
    entered = Signal(str)

    def __init__(self, metrics: Metrics, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._digits = ""
        layout = QVBoxLayout(self)
        layout.setSpacing(14)
        self.dots = QLabel("")
        self.dots.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.dots.setStyleSheet(f"font-size: {metrics.title_px}px; letter-spacing: 8px;")
        self.dots.setMinimumHeight(metrics.touch_px)
        layout.addWidget(self.dots)
        grid = QGridLayout()
        grid.setSpacing(10)
        labels = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "⌫", "0", "OK"]
        self.keys: dict[str, QPushButton] = {}
        for index, label in enumerate(labels):
            key = QPushButton(label)
            key.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            key.setMinimumSize(int(metrics.touch_px * 1.4), metrics.touch_px)
            if label == "OK":
                key.setProperty("role", "primary")
            key.clicked.connect(lambda _=False, k=label: self._press(k))
            grid.addWidget(key, index // 3, index % 3)
            self.keys[label] = key
        layout.addLayout(grid)

    def type_pin(self, pin: str) -> None:
        """Press the keys of `pin` then OK, as a finger would."""
        for digit in pin:
            self.keys[digit].click()
        self.keys["OK"].click()

    def clear(self) -> None:
        self._digits = ""
        self.dots.setText("")

    def _press(self, label: str) -> None:
        if label == "⌫":
            self._digits = self._digits[:-1]
        elif label == "OK":
            pin, self._digits = self._digits, ""
            self.dots.setText("")
            self.entered.emit(pin)
            return
        elif len(self._digits) < 12:
            self._digits += label
        self.dots.setText("●" * len(self._digits))
