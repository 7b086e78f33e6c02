"""The main screen: live preview, who is in front of the kiosk, and the conversation.

Each question re-verifies the person when it is sent (AnswerTask calls verify_now first). The
conversation belongs to one person: when someone else is verified, or steadily seen, it disappears.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout

from kiosk.app.terminal_kind import palm_only
from kiosk.app.views import AnswerView, FrameView, Presence, Verification
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import ADMIN, ENROLL, MEMORY, Screen, label
from kiosk.ui.widgets.camera import BADGE_STYLE, PALM_ONLY_BADGE_STYLE, CameraPreview, IdentityBadge
from kiosk.ui.widgets.conversation import (
    FALLBACK_REASONS,
    PALM_ONLY_FALLBACK_REASONS,
    AnswerBubble,
    ConversationView,
)
from kiosk.ui.widgets.keyboard import OnScreenKeyboard
from kiosk.ui.workers import AnswerTask, submit

PREPARE_AFTER_MS = 350  # a pause in typing this long starts preparing the answer (retrieval + prompt prefill)
FRAMES_TO_SWITCH_PERSON = 5  # consecutive analysed frames (0.5 s at 10 fps) of a new person clear the old chat
STEP_UP_WAIT_MS = 2000  # "I have a private note…": ask once more after this long, with a probe fused from new frames


class MainScreen(Screen):
    answer_done = Signal(object)  # AnswerView or an error string; tests wait on it
    remembered = Signal(object)  # note id, None, or an error string

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.owner_key: str | None = None  # the person the visible conversation belongs to
        self._candidate_key: str | None = None
        self._candidate_frames = 0
        self._pending: AnswerBubble | None = None
        self._task: AnswerTask | None = None
        self._preparing = False
        self._prepare_again = False  # words were typed while a prepare ran: prepare the newest text after it
        self._prepared_text = ""
        self._step_up_question: str | None = None  # asked again once after a step-up answer (None: nothing to ask)
        self._retrying = False  # the turn in flight is that one automatic re-ask
        self._prepare_timer = QTimer(self)
        self._prepare_timer.setSingleShot(True)
        self._prepare_timer.setInterval(PREPARE_AFTER_MS)
        self._prepare_timer.timeout.connect(self._prepare)

        root = QHBoxLayout(self)
        margin = 16 if ctx.desktop else 28
        root.setContentsMargins(margin, margin, margin, margin)
        root.setSpacing(margin)

        left = QVBoxLayout()
        left.setSpacing(14)
        title = label("Bio-Memory Kiosk", "title", wrap=False)
        self.preview = CameraPreview()
        self.badge = IdentityBadge(styles=PALM_ONLY_BADGE_STYLE if palm_only(ctx.config.capture) else BADGE_STYLE)
        nav = QHBoxLayout()
        self.memory_button = QPushButton("My memories")
        self.enroll_button = QPushButton("Enrol me")
        self.admin_button = QPushButton("⚙")
        self.admin_button.setToolTip("Administration")
        self.memory_button.clicked.connect(lambda: self.navigate.emit(MEMORY))
        self.enroll_button.clicked.connect(lambda: self.navigate.emit(ENROLL))
        self.admin_button.clicked.connect(lambda: self.navigate.emit(ADMIN))
        nav.addWidget(self.memory_button, 2)
        nav.addWidget(self.enroll_button, 2)
        nav.addWidget(self.admin_button, 0)
        left.addWidget(title)
        left.addWidget(self.preview, 1)
        left.addWidget(self.badge)
        left.addLayout(nav)

        right_card = QFrame()
        right_card.setProperty("role", "card")
        right = QVBoxLayout(right_card)
        right.setContentsMargins(18, 18, 18, 18)
        right.setSpacing(12)
        self.conversation = ConversationView(
            reasons=PALM_ONLY_FALLBACK_REASONS if palm_only(ctx.config.capture) else FALLBACK_REASONS
        )
        self.input = QLineEdit()
        self.input.setPlaceholderText("Type a question or tell me something to remember…")
        self.input.returnPressed.connect(self.send)
        self.input.textChanged.connect(self._typing)
        self.send_button = QPushButton("Send")
        self.send_button.setProperty("role", "primary")
        self.send_button.clicked.connect(self.send)
        entry = QHBoxLayout()
        entry.addWidget(self.input, 1)
        entry.addWidget(self.send_button)
        self.status = label("", "muted")
        right.addWidget(self.conversation, 1)
        right.addWidget(self.status)
        right.addLayout(entry)
        self.keyboard: OnScreenKeyboard | None = None
        if not ctx.desktop:
            self.keyboard = OnScreenKeyboard(ctx.metrics)
            self.keyboard.set_target(self.input)
            self.keyboard.submitted.connect(self.send)
            right.addWidget(self.keyboard)
            self.send_button.hide()  # the keyboard's own Send key is where the finger already is

        root.addLayout(left, 5 if ctx.desktop else 4)
        root.addWidget(right_card, 6)

    # --- camera -------------------------------------------------------------------------------------
    def on_frame(self, view: FrameView) -> None:
        self.preview.show_frame(view)
        self.badge.set_presence(view.presence)
        self._track_person(view.presence)

    def show_camera_problem(self, message: str) -> None:
        self.preview.show_message(message)
        self.badge.set_presence(Presence("no-camera"))

    def _track_person(self, presence: Presence) -> None:
        if presence.state in ("nobody", "unclear", "no-camera") or self.owner_key is None:
            self._candidate_frames = 0
            return
        key = presence.person_key
        if key == self.owner_key:
            self._candidate_frames = 0
            return
        if key != self._candidate_key:
            self._candidate_key, self._candidate_frames = key, 0
        self._candidate_frames += 1
        if self._candidate_frames >= FRAMES_TO_SWITCH_PERSON and self._pending is None:
            self.clear_conversation()

    # --- conversation -------------------------------------------------------------------------------
    def clear_conversation(self) -> None:
        self.conversation.clear()
        self.owner_key = None
        self._candidate_frames = 0
        self._step_up_question = None
        self.status.setText("")

    def _typing(self, text: str) -> None:
        if not text.strip():
            self._prepare_timer.stop()
        elif text.endswith(" "):  # a word is complete: prepare for it now, the last one may come without a pause
            self._prepare_timer.stop()
            self._prepare()
        else:
            self._prepare_timer.start()

    def _prepare(self) -> None:
        """Work that does not need the whole question starts while it is typed (off the GUI thread).

        One prepare at a time; one asked for meanwhile runs after it with the newest words, so the prompt
        prefilled at "send" is the closest there was to the question."""
        text = self.input.text().strip()
        services = self.ctx.services
        if not text or text == self._prepared_text or services is None or self._pending is not None:
            return
        if self._preparing:
            self._prepare_again = True
            return
        self._preparing = True
        self._prepare_again = False
        self._prepared_text = text

        def settled(_result: object) -> None:
            self._preparing = False
            if self._prepare_again:
                self._prepare()

        submit(lambda _p: services.prepare(text), settled, settled, pool=self.ctx.pool)

    def send(self) -> None:
        self._prepare_timer.stop()
        self._prepared_text = ""  # the answer and its note construction replace what the LLM holds
        question = self.input.text().strip()
        if not question or self._pending is not None or self.ctx.services is None:
            return
        self.input.clear()
        self._step_up_question = None  # a new question replaces a pending re-ask
        self._ask(question)

    def _ask(self, question: str, *, retry: bool = False) -> None:
        assert self.ctx.services is not None
        self._retrying = retry
        self.conversation.add_question(question)
        self._pending = self.conversation.add_answer(self._cover_sensitive())
        self.send_button.setEnabled(False)
        task = AnswerTask(self.ctx.services, question)
        task.signals.verified.connect(self._on_verified)
        task.signals.token.connect(self._on_token)
        task.signals.finished.connect(self._on_answer)
        task.signals.failed.connect(self._on_failed)
        self._task = task
        self._question = question
        self.ctx.pool.start(task)

    def _on_verified(self, verification: Verification) -> None:
        key = verification.presence.person_key
        if self.owner_key is not None and key != self.owner_key:
            # Someone else asked: the previous person's conversation must not stay on screen.
            self.conversation.clear()
            if not self._retrying:  # the automatic re-ask's question was the previous person's: not shown
                self.conversation.add_question(self._question)
            self._pending = self.conversation.add_answer(self._cover_sensitive())
        self.owner_key = key
        if self._pending is not None:
            self._pending.set_verified(verification.presence)

    def _cover_sensitive(self) -> bool:
        """Kiosk mode covers sensitive memories until tapped; the family desktop shows them, marked."""
        return not self.ctx.desktop and self.ctx.config.sensitive.tap_to_reveal

    def _on_token(self, token: str) -> None:
        if self._pending is not None:
            self._pending.append_token(token)

    def _on_answer(self, result: AnswerView) -> None:
        if self._pending is not None:
            self._pending.finish(result)
        self._finish_turn()
        retried, self._retrying = self._retrying, False
        verification = self._task.verification if self._task is not None else None
        recognised = verification is not None and verification.presence.state == "recognised"
        if recognised and verification is not None and verification.probe and not retried:
            self._remember(self._question, verification)
        if result.step_up is not None and not result.notes and recognised and not retried:
            # The person's own private note needs a stronger probe: ask once more when the camera has had time to
            # gather frames of them (the probe at send time is fused from frames captured after it).
            self._step_up_question = self._question
            self.status.setText(f"A private note needs a closer look: {result.step_up}. Asking again…")
            QTimer.singleShot(STEP_UP_WAIT_MS, self._ask_again)
        self.answer_done.emit(result)

    def _ask_again(self) -> None:
        question, self._step_up_question = self._step_up_question, None
        if question is None or self._pending is not None or self.ctx.services is None:
            return
        self.status.setText("")
        self._ask(question, retry=True)

    def _on_failed(self, message: str) -> None:
        self._retrying = False
        if self._pending is not None:
            self._pending.fail(message)
        self._finish_turn()
        self.answer_done.emit(message)

    def _finish_turn(self) -> None:
        self._pending = None
        self.send_button.setEnabled(True)
        self.conversation.scroll_to_end()

    def _remember(self, text: str, verification: Verification) -> None:
        services = self.ctx.require_services()
        name = verification.presence.name

        def done(note_id: object) -> None:
            if note_id is not None:
                self.status.setText(f"✓ Saved to {name}'s memory")
            self.remembered.emit(note_id)

        def failed(message: str) -> None:
            self.status.setText(f"Not saved to memory: {message}")
            self.remembered.emit(message)

        submit(lambda _p: services.remember(text, verification), done, failed, pool=self.ctx.pool)

    def type_with_keyboard(self, text: str) -> None:
        """Press on-screen keys for `text` (kiosk mode) or type into the field (desktop)."""
        if self.keyboard is None:
            self.input.insert(text)
            return
        for char in text:
            self.keyboard.press(char)

    def busy(self) -> bool:
        return self._pending is not None

    def focus_input(self) -> None:
        self.input.setFocus(Qt.FocusReason.OtherFocusReason)

    def on_enter(self) -> None:
        self.focus_input()
