"""The verified person's own notes: read, delete one, restore a faded one, mark one sensitive (or not), or forget
me entirely.

Opening the screen and every change re-verify the person first; nobody sees or changes someone else's notes.
Faded notes (archived below the strength floor) stay listed, marked, with a button that restores them. Each
note has a sensitivity choice (not sensitive, or what kind); a sensitive note needs a closer look to be used.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QPushButton, QScrollArea, QVBoxLayout, QWidget

from kiosk.app.views import SENSITIVE_WORDS, KioskServices, NoteView, Verification
from kiosk.errors import ProbeError
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import MAIN, Screen, label
from kiosk.ui.widgets.conversation import RevealButton, sensitive_mark
from kiosk.ui.workers import submit


class MemoryScreen(Screen):
    changed = Signal(str)  # what just happened, for tests and the status line

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.verification: Verification | None = None
        self.notes: list[NoteView] = []
        self.reveal_buttons: dict[int, RevealButton] = {}
        root = QVBoxLayout(self)
        root.setContentsMargins(40, 32, 40, 32)
        root.setSpacing(18)
        header = QHBoxLayout()
        self.title = label("Your memories", "title", wrap=False)
        back = QPushButton("Back")
        back.clicked.connect(lambda: self.navigate.emit(MAIN))
        header.addWidget(self.title, 1)
        header.addWidget(back)
        self.status = label("", "muted")
        self.notes_area = QScrollArea()
        self.notes_area.setWidgetResizable(True)
        self.list_host = QWidget()
        self.list_layout = QVBoxLayout(self.list_host)
        self.list_layout.setSpacing(10)
        self.list_layout.addStretch(1)
        self.notes_area.setWidget(self.list_host)
        self.forget_button = QPushButton("Forget me")
        self.forget_button.setProperty("role", "danger")
        self.forget_button.clicked.connect(self._ask_forget)
        self.confirm = QFrame()
        self.confirm.setProperty("role", "card")
        confirm_row = QHBoxLayout(self.confirm)
        confirm_row.setContentsMargins(24, 16, 24, 16)
        confirm_row.addWidget(label("Delete all your memories and your face template? This cannot be undone."), 1)
        self.confirm_yes = QPushButton("Yes, forget me")
        self.confirm_yes.setProperty("role", "danger")
        self.confirm_yes.clicked.connect(self._forget)
        confirm_no = QPushButton("Keep them")
        confirm_no.clicked.connect(self.confirm.hide)
        confirm_row.addWidget(confirm_no)
        confirm_row.addWidget(self.confirm_yes)
        self.confirm.hide()
        root.addLayout(header)
        root.addWidget(self.status)
        root.addWidget(self.notes_area, 1)
        root.addWidget(self.confirm)
        root.addWidget(self.forget_button, 0, Qt.AlignmentFlag.AlignRight)

    def on_enter(self) -> None:
        self.verification = None
        self.confirm.hide()
        self.forget_button.setEnabled(False)
        self._show_notes([])
        self.title.setText("Your memories")
        self.status.setText("Checking who you are…")
        services = self.ctx.require_services()

        def load(_progress: object) -> tuple[Verification, list[NoteView]]:
            verification = services.verify_now()
            if verification.presence.state != "recognised":
                return verification, []
            return verification, services.list_notes(verification)

        submit(load, self._loaded, self._failed, pool=self.ctx.pool)

    def _loaded(self, result: tuple[Verification, list[NoteView]]) -> None:
        verification, notes = result
        if verification.presence.state != "recognised":
            self.status.setText(
                "I need to recognise you before I can show your memories. "
                "Stand alone in front of the camera, or enrol first."
            )
            self.changed.emit("not-recognised")
            return
        self.verification = verification
        self.title.setText(f"{verification.presence.name}'s memories")
        self.status.setText(self._summary(notes) + " Only you can see these.")
        self.forget_button.setEnabled(True)
        self._show_notes(notes)
        self.changed.emit("loaded")

    def _failed(self, message: str) -> None:
        self.status.setText(message)
        self.changed.emit("failed")

    def _show_notes(self, notes: list[NoteView]) -> None:
        self.notes = list(notes)
        self.reveal_buttons = {}
        while self.list_layout.count() > 1:
            item = self.list_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        for note in notes:
            row = QFrame()
            row.setProperty("role", "card")
            line = QHBoxLayout(row)
            line.setContentsMargins(20, 12, 12, 12)
            text = QVBoxLayout()
            text.setSpacing(4)
            content = label(note.content, "muted" if note.archived else None)
            if note.sensitivity:
                mark = label(sensitive_mark(note.sensitivity), "muted")
                mark.setObjectName(f"sensitive-{note.id}")
                text.addWidget(mark)
                if not self.ctx.desktop and self.ctx.config.sensitive.tap_to_reveal:
                    cover = RevealButton("Hidden", content)
                    cover.setObjectName(f"reveal-{note.id}")
                    self.reveal_buttons[note.id] = cover
                    text.addWidget(cover)
            text.addWidget(content)
            when = note.timestamp.strftime("%d %B %Y, %H:%M")
            if note.archived:
                when += "  ·  faded: not used in answers until you restore it"
            text.addWidget(label(when, "muted"))
            line.addLayout(text, 1)
            if note.archived:
                restore = QPushButton("Restore")
                restore.setObjectName(f"restore-{note.id}")
                restore.clicked.connect(lambda _=False, note_id=note.id: self.restore_note(note_id))
                line.addWidget(restore)
            line.addWidget(self._sensitivity_choice(note))
            delete = QPushButton("Delete")
            delete.setObjectName(f"delete-{note.id}")
            delete.clicked.connect(lambda _=False, note_id=note.id: self.delete_note(note_id))
            line.addWidget(delete)
            self.list_layout.insertWidget(self.list_layout.count() - 1, row)

    def _sensitivity_choice(self, note: NoteView) -> QComboBox:
        """'Not sensitive' or the kind of sensitive note; choosing one marks the note (the person's mark stands)."""
        choice = QComboBox()
        choice.setObjectName(f"sensitivity-{note.id}")
        choice.setToolTip("Sensitive notes are only used when I am sure it is you")
        choice.addItem("Not sensitive", None)
        for category, words in SENSITIVE_WORDS.items():
            choice.addItem(f"Sensitive: {words}", category)
        choice.setCurrentIndex(max(choice.findData(note.sensitivity), 0))
        choice.activated.connect(lambda index, note_id=note.id: self.mark_note(note_id, choice.itemData(index)))
        return choice

    def mark_note(self, note_id: int, sensitivity: str | None) -> None:
        services = self.ctx.require_services()

        def work(_progress: object) -> tuple[Verification, list[NoteView]]:
            verification = self._reverify(services)
            services.mark_note(verification, note_id, sensitivity)
            return verification, services.list_notes(verification)

        submit(work, self._after_change("marked"), self._failed, pool=self.ctx.pool)

    def delete_note(self, note_id: int) -> None:
        services = self.ctx.require_services()

        def work(_progress: object) -> tuple[Verification, list[NoteView]]:
            verification = self._reverify(services)
            services.delete_note(verification, note_id)
            return verification, services.list_notes(verification)

        submit(work, self._after_change("deleted"), self._failed, pool=self.ctx.pool)

    def restore_note(self, note_id: int) -> None:
        services = self.ctx.require_services()

        def work(_progress: object) -> tuple[Verification, list[NoteView]]:
            verification = self._reverify(services)
            services.restore_note(verification, note_id)
            return verification, services.list_notes(verification)

        submit(work, self._after_change("restored"), self._failed, pool=self.ctx.pool)

    @staticmethod
    def _summary(notes: list[NoteView]) -> str:
        faded = sum(1 for note in notes if note.archived)
        return f"{len(notes)} memories ({faded} faded)." if faded else f"{len(notes)} memories."

    def _ask_forget(self) -> None:
        self.confirm.show()

    def _forget(self) -> None:
        self.confirm.hide()
        services = self.ctx.require_services()

        def work(_progress: object) -> tuple[Verification, list[NoteView]]:
            verification = self._reverify(services)
            services.forget_me(verification)
            return verification, []

        def done(result: tuple[Verification, list[NoteView]]) -> None:
            self._show_notes([])
            self.forget_button.setEnabled(False)
            self.status.setText("Done. Everything I knew about you is gone, including your face template.")
            self.changed.emit("forgotten")

        submit(work, done, self._failed, pool=self.ctx.pool)

    def _reverify(self, services: KioskServices) -> Verification:
        if self.verification is None:
            raise ProbeError("nobody is verified on this screen", "open it again while you are in view")
        verification = services.verify_now()
        if verification.presence.person_key != self.verification.presence.person_key:
            raise ProbeError("the person in front of the camera changed", "the owner must be in view to do this")
        return verification

    def _after_change(self, what: str) -> Callable[[tuple[Verification, list[NoteView]]], None]:
        def done(result: tuple[Verification, list[NoteView]]) -> None:
            _verification, notes = result
            self._show_notes(notes)
            done_what = {"deleted": "Deleted", "restored": "Restored", "marked": "Marked"}[what]
            self.status.setText(f"{done_what}. {self._summary(notes)}")
            self.changed.emit(what)

        return done
