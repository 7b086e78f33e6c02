"""The conversation: question bubbles, streamed answers, and what memory each answer used."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from kiosk.app.views import SENSITIVE_WORDS, AnswerView, NoteView, Presence
from kiosk.ui import theme

FLUSH_MS = 60

FALLBACK_REASONS = {
    "unknown": "You were not recognised, so I answered without personal memory.",
    "multiple": "Two people are in view, so personal memory stays hidden.",
    "nobody": "I could not see anyone when you asked, so I answered without personal memory.",
    "unclear": "I could not see your face clearly when you asked, so I answered without personal memory.",
    "no-camera": "The camera was not available, so I answered without personal memory.",
    "recognised": "No memories of yours matched this question.",
}
# A terminal whose only biometric is a palm scanner speaks of the palm, not the face (as its badge does).
PALM_ONLY_FALLBACK_REASONS = {
    **FALLBACK_REASONS,
    "nobody": "No palm was on the scanner when you asked, so I answered without personal memory.",
    "unclear": "I could not read your palm clearly when you asked, so I answered without personal memory.",
    "no-camera": "The palm scanner was not available, so I answered without personal memory.",
}


def _label(text: str, role: str | None = None, wrap: bool = True) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(wrap)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if role:
        label.setProperty("role", role)
    return label


class QuestionBubble(QFrame):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.setStyleSheet(
            f"QuestionBubble {{ background: {theme.ACCENT_DARK}; border-radius: 18px; }}QLabel {{ color: white; }}"
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 14, 20, 14)
        self.body = _label(text)
        layout.addWidget(self.body)


def sensitive_mark(sensitivity: str) -> str:
    return f"◆ Sensitive ({SENSITIVE_WORDS.get(sensitivity, sensitivity)})"


class RevealButton(QPushButton):
    """Covers a sensitive text until tapped; then the text takes its place (kiosk mode)."""

    def __init__(self, cover: str, reveal: QLabel) -> None:
        super().__init__(f"{cover} — tap to reveal")
        self.setProperty("role", "link")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.revealed = reveal
        reveal.hide()
        self.clicked.connect(self.reveal)

    def reveal(self) -> None:
        self.hide()
        self.revealed.show()


class AnswerBubble(QFrame):
    """Streams tokens, then settles into one of three calm states: personal, without memory, or failed.

    With `cover_sensitive` (kiosk mode), an answer made from a sensitive memory and the sensitive memories
    listed under it stay covered until tapped.
    """

    def __init__(self, cover_sensitive: bool = False, reasons: dict[str, str] = FALLBACK_REASONS) -> None:
        super().__init__()
        self.cover_sensitive = cover_sensitive
        self.reasons = reasons
        self.reveal_buttons: list[RevealButton] = []
        self.state = "pending"
        self._style(theme.BORDER, theme.SURFACE)
        layout = QVBoxLayout(self)
        self.column = layout
        layout.setContentsMargins(22, 16, 22, 16)
        layout.setSpacing(10)
        self.header = _label("Checking who you are…", "muted")
        self.body = _label("")
        self.body.hide()
        self.memory_toggle = QPushButton()
        self.memory_toggle.setProperty("role", "link")
        self.memory_toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.memory_toggle.hide()
        self.memory_toggle.clicked.connect(self._toggle_notes)
        self.notes = QFrame()
        self.notes.setStyleSheet("background: transparent;")
        self.notes_layout = QVBoxLayout(self.notes)
        self.notes_layout.setContentsMargins(0, 0, 0, 0)
        self.notes_layout.setSpacing(6)
        self.notes.hide()
        layout.addWidget(self.header)
        layout.addWidget(self.body)
        layout.addWidget(self.memory_toggle)
        layout.addWidget(self.notes)
        self.fallback_reason = _label("", "muted")
        self.fallback_reason.hide()
        layout.addWidget(self.fallback_reason)
        self.withheld = _label("", "muted")
        self.withheld.hide()
        layout.addWidget(self.withheld)
        self.result: AnswerView | None = None
        self._buffer: list[str] = []
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(FLUSH_MS)
        self._flush_timer.timeout.connect(self.flush)

    def _style(self, border: str, background: str, dashed: bool = False) -> None:
        self.setStyleSheet(
            f"AnswerBubble {{ background: {background}; border: 2px {'dashed' if dashed else 'solid'} {border};"
            " border-radius: 18px; }"
        )

    def set_verified(self, presence: Presence) -> None:
        self.header.setText(f"Verified: {presence.name} · thinking…" if presence.state == "recognised" else "Thinking…")

    def append_token(self, token: str) -> None:
        """The first words are painted at once; later tokens are buffered and painted at most every FLUSH_MS:
        a relayout per token would stall the GUI."""
        self._buffer.append(token)
        if not self.body.text():
            self.flush()
        elif not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush(self) -> None:
        self._flush_timer.stop()
        if self._buffer:
            self.body.show()
            self.body.setText(self.body.text() + "".join(self._buffer))
            self._buffer.clear()

    def finish(self, result: AnswerView) -> None:
        self.flush()
        self.result = result
        self.body.show()
        self.body.setText(result.text.strip() or self.body.text().strip() or "(no answer)")
        if result.withheld_sensitive:
            count = result.withheld_sensitive
            self.withheld.setText(
                f"{count} sensitive {'memory was' if count == 1 else 'memories were'} held back: "
                "they need a stronger check of who you are."
            )
            self.withheld.show()
        own = [note for note in result.notes if note.scope != "public"]
        public = len(result.notes) - len(own)
        if result.decision == "owner" and own:
            self.state = "personal"
            self._style(theme.ACCENT_DARK, theme.SURFACE)
            self.header.setText(f"Answered for {result.presence.name} from your memory")
            if result.sensitive and self.cover_sensitive:
                categories = sorted({n.sensitivity for n in result.notes if n.sensitivity})
                cover = RevealButton(
                    "◆ This answer uses a sensitive memory ("
                    + ", ".join(SENSITIVE_WORDS.get(c, c) for c in categories)
                    + ")",
                    self.body,
                )
                self.column.insertWidget(self.column.indexOf(self.body), cover)
                cover.show()  # added to a bubble already on screen: Qt leaves it hidden otherwise
                self.reveal_buttons.append(cover)
            shared = f" and {public} shared with everyone" if public else ""
            self.memory_toggle.setText(f"▸  Used {len(own)} of your memories{shared}")
            self.memory_toggle.show()
            for note in result.notes:
                self._add_note_row(note)
        else:
            self.state = "fallback"
            self._style(theme.CALM, "#1e1b4b", dashed=True)
            state = "multiple" if result.decision == "hidden-multiple-faces" else result.presence.state
            self.header.setText("◌  Answered without personal memory")
            self.header.setStyleSheet(f"color: {theme.CALM}; font-weight: 600;")
            reason = self.reasons.get(state, self.reasons["unknown"])
            if result.liveness_reason:
                reason = (
                    f"This may be a photo or a screen, not a person ({result.liveness_reason}), "
                    "so personal memory stays hidden."
                )
            if public:
                reason += f" Only {public} public notes, shared with everyone, were used."
            self.fallback_reason.setText(reason)
            self.fallback_reason.show()

    def _add_note_row(self, note: NoteView) -> None:
        when = note.timestamp.strftime("%d %b %Y")
        where = "" if note.scope == "personal" else f" · {note.scope}"
        if not note.sensitivity:
            self.notes_layout.addWidget(_label(f"•  {note.content}   ({when}{where})", "muted"))
            return
        row = _label(f"•  {sensitive_mark(note.sensitivity)}: {note.content}   ({when}{where})", "muted")
        if self.cover_sensitive:
            cover = RevealButton(f"•  {sensitive_mark(note.sensitivity)} memory", row)
            self.notes_layout.addWidget(cover)
            self.reveal_buttons.append(cover)
        self.notes_layout.addWidget(row)

    def fail(self, message: str) -> None:
        self._flush_timer.stop()
        self._buffer.clear()
        self.state = "failed"
        self._style(theme.WARN, theme.SURFACE)
        self.header.setText("I could not answer this time")
        self.header.setStyleSheet(f"color: {theme.WARN}; font-weight: 600;")
        self.body.show()
        self.body.setText(message)

    def _toggle_notes(self) -> None:
        visible = not self.notes.isVisible()
        self.notes.setVisible(visible)
        text = self.memory_toggle.text()[1:]
        self.memory_toggle.setText(("▾" if visible else "▸") + text)


class ConversationView(QScrollArea):
    def __init__(self, parent: QWidget | None = None, reasons: dict[str, str] = FALLBACK_REASONS) -> None:
        super().__init__(parent)
        self.reasons = reasons
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        inner.setObjectName("conversation")
        inner.setStyleSheet("QWidget#conversation { background: transparent; }")
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QScrollArea { background: transparent; }")
        self.column = QVBoxLayout(inner)
        self.column.setContentsMargins(8, 8, 16, 8)
        self.column.setSpacing(14)
        self.placeholder = _label(
            "Ask me anything.\nWhat you tell me becomes your memory — only you can bring it back.", "muted"
        )
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # Empty: the invitation sits in the middle. With bubbles: they start at the top.
        self.top_space = QWidget()
        self.top_space.setStyleSheet("background: transparent;")
        self.top_space.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.column.addWidget(self.top_space, 1)
        self.column.addWidget(self.placeholder)
        self.column.addStretch(1)
        self.setWidget(inner)
        self.bubbles: list[QFrame] = []
        # Growing content (a streaming answer) keeps the newest text in view.
        self.verticalScrollBar().rangeChanged.connect(lambda _low, high: self.verticalScrollBar().setValue(high))

    def _add(self, bubble: QFrame, right: bool) -> None:
        self.placeholder.hide()
        self.top_space.hide()
        row = QHBoxLayout()
        if right:
            row.addStretch(1)
        row.addWidget(bubble, 5)
        if not right:
            row.addStretch(1)
        self.column.insertLayout(self.column.count() - 1, row)
        self.bubbles.append(bubble)
        QTimer.singleShot(0, self.scroll_to_end)

    def add_question(self, text: str) -> QuestionBubble:
        bubble = QuestionBubble(text)
        self._add(bubble, right=True)
        return bubble

    def add_answer(self, cover_sensitive: bool = False) -> AnswerBubble:
        bubble = AnswerBubble(cover_sensitive, self.reasons)
        self._add(bubble, right=False)
        return bubble

    def answers(self) -> list[AnswerBubble]:
        return [b for b in self.bubbles if isinstance(b, AnswerBubble)]

    def clear(self) -> None:
        while self.column.count() > 3:
            item = self.column.takeAt(2)
            layout = item.layout() if item is not None else None
            if layout is not None:
                while layout.count():
                    child = layout.takeAt(0)
                    widget = child.widget() if child is not None else None
                    if widget is not None:
                        widget.hide()  # gone from the screen now, not when the deferred delete runs
                        widget.deleteLater()
                layout.deleteLater()
        self.bubbles.clear()
        self.placeholder.show()
        self.top_space.show()

    def scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())
