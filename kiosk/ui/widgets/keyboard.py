"""An on-screen keyboard for a finger: big keys that never take focus from the text field."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLineEdit, QPushButton, QSizePolicy, QWidget

from kiosk.ui.theme import Metrics

LETTER_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl'", "zxcvbnm,.?")
SYMBOL_ROWS = ("1234567890", "!@#$%&*()-", "_=+/\\:;\"'€", "<>[]{}~^|`")
SHIFT, BACKSPACE, SPACE, ENTER, MODE = "⇧", "⌫", "space", "Send", "?123"


class OnScreenKeyboard(QWidget):
    submitted = Signal()

    def __init__(self, metrics: Metrics, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._target: QLineEdit | None = None
        self._shift = False
        self._symbols = False
        self._char_keys: list[QPushButton] = []
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(6)
        for row in range(4):
            for col in range(10):
                key = self._key("", metrics)
                key.clicked.connect(lambda _=False, k=key: self._type(str(k.property("char"))))
                grid.addWidget(key, row, col)
                self._char_keys.append(key)
        self.shift_key = self._key(SHIFT, metrics)
        self.shift_key.setCheckable(True)
        self.shift_key.clicked.connect(self._toggle_shift)
        self.mode_key = self._key(MODE, metrics)
        self.mode_key.clicked.connect(self._toggle_symbols)
        space = self._key(SPACE, metrics)
        self.space_key = space
        space.clicked.connect(lambda: self._type(" "))
        backspace = self._key(BACKSPACE, metrics)
        backspace.setAutoRepeat(True)
        backspace.clicked.connect(self._backspace)
        enter = self._key(ENTER, metrics)
        self.enter_key = enter
        enter.setProperty("role", "primary")
        enter.clicked.connect(self.submitted.emit)
        grid.addWidget(self.shift_key, 4, 0, 1, 1)
        grid.addWidget(self.mode_key, 4, 1, 1, 1)
        grid.addWidget(space, 4, 2, 1, 5)
        grid.addWidget(backspace, 4, 7, 1, 1)
        grid.addWidget(enter, 4, 8, 1, 2)
        self._relabel()

    def _key(self, label: str, metrics: Metrics) -> QPushButton:
        key = QPushButton(label, self)
        key.setProperty("role", "key")
        key.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        key.setMinimumSize(metrics.touch_px, metrics.touch_px)
        key.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        return key

    def set_target(self, target: QLineEdit) -> None:
        self._target = target

    def key_for(self, char: str) -> QPushButton:
        """The key that types `char` on the current page (for tests and accessibility tools)."""
        for key in self._char_keys:
            if key.property("char") == char:
                return key
        raise KeyError(char)

    def press(self, char: str) -> None:
        """Press the keys a finger would for `char`: shift or the symbol page when needed."""
        if char == " ":
            self.space_key.click()
            return
        for symbols, shift in ((False, False), (False, True), (True, False)):
            rows = SYMBOL_ROWS if symbols else LETTER_ROWS
            chars = "".join(rows)
            if char in (chars.upper() if shift else chars):
                if symbols != self._symbols:
                    self.mode_key.click()
                if shift and not self._shift:
                    self.shift_key.click()
                self.key_for(char).click()
                return
        raise KeyError(char)

    def _type(self, text: str) -> None:
        if self._target is None or not text:
            return
        self._target.insert(text)
        if self._shift:
            self._shift = False
            self.shift_key.setChecked(False)
            self._relabel()

    def _backspace(self) -> None:
        if self._target is not None:
            self._target.backspace()

    def _toggle_shift(self) -> None:
        self._shift = self.shift_key.isChecked()
        self._relabel()

    def _toggle_symbols(self) -> None:
        self._symbols = not self._symbols
        self.mode_key.setText("abc" if self._symbols else MODE)
        self._relabel()

    def _relabel(self) -> None:
        rows = SYMBOL_ROWS if self._symbols else LETTER_ROWS
        chars = "".join(rows)
        for key, char in zip(self._char_keys, chars, strict=True):
            shown = char.upper() if self._shift and not self._symbols else char
            key.setProperty("char", shown)
            key.setText("&&" if shown == "&" else shown)  # a lone & would become a mnemonic marker
