"""Enrollment wizard: consent, capture several good frames with live hints, name, done."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from kiosk.app.terminal_kind import has_scanner, palm_only
from kiosk.app.views import ChallengeView, EnrollSample, FrameView, UserView
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import MAIN, Screen, label
from kiosk.ui.widgets.camera import CameraPreview
from kiosk.ui.widgets.keyboard import OnScreenKeyboard
from kiosk.ui.workers import submit

SAMPLES_NEEDED = 5
SAMPLE_INTERVAL_MS = 250
POSE_CHANGE_MS = 1200
"""Pause after asking for another head pose, so the next frame shows it rather than the last one."""
CHALLENGE_POLL_MS = 150
CHALLENGE_ATTEMPTS = 3

CONSENT = (
    "To remember you, I keep a face template: a list of numbers computed from your face, not a photo. "
    "It stays on this terminal, is used only to recognise you when you ask something, and you can delete "
    "it and all your memories at any time with “Forget me”."
)
CONSENT_PALM = (
    "To remember you, I keep a palm template: a list of numbers computed from your palm print, not a picture. "
    "It stays on this terminal, is used only to recognise you when you ask something, and you can delete "
    "it and all your memories at any time with “Forget me”."
)
CONSENT_FACE_AND_PALM = (
    "To remember you, I keep a face template and a palm template: lists of numbers computed from your face and "
    "your palm print, not pictures. They stay on this terminal, are used only to recognise you when you ask "
    "something, and you can delete them and all your memories at any time with “Forget me”."
)
CAPTURE_FACE = "Look at the camera, then turn your head a little when I ask. I keep a few clear views of it."
CAPTURE_PALM = "Hold your open palm still over the scanner. I keep a few clear scans of it."
CAPTURE_FACE_AND_PALM = "Hold your face steady in the frame and your open palm over the scanner."
LOOK = "Look at the camera"
FACE_POSES = (
    LOOK,
    LOOK,
    "Turn your head a little to your left",
    "Now a little to your right",
    "Look at the camera again",
)
"""The face wanted for each sample: enrolment that saw only one pose refuses the person when they stand turned
(on the face video 16 % of step-ups failed with one pose enrolled, none with both; bench/results/video_enrolment.md)."""
PLACE_PALM = "Hold your open palm over the scanner"
PALM_NOT_ENROLLED = "Your palm was not read clearly, so I will know you by your face. Enrol again to add it."


class EnrollScreen(Screen):
    step_changed = Signal(str)
    enrolled = Signal(object)  # UserView

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.samples: list[EnrollSample] = []
        self._sampling = False
        root = QVBoxLayout(self)
        root.setContentsMargins(40, 32, 40, 32)
        root.setSpacing(18)
        header = QHBoxLayout()
        self.title = label("Enrol", "title", wrap=False)
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self._cancel)
        header.addWidget(self.title, 1)
        header.addWidget(cancel)
        root.addLayout(header)
        self.pages = QStackedWidget()
        root.addWidget(self.pages, 1)

        consent = QWidget()
        consent_layout = QVBoxLayout(consent)
        consent_card = QFrame()
        consent_card.setProperty("role", "card")
        consent_card.setFixedWidth(760 if ctx.desktop else 1000)
        card_layout = QVBoxLayout(consent_card)
        card_layout.setContentsMargins(48, 40, 48, 40)
        card_layout.setSpacing(22)
        card_layout.addWidget(label("Before we start", "title"))
        self.palm_only = palm_only(ctx.config.capture)
        self.with_palm = has_scanner(ctx.config.capture) and not self.palm_only  # palm codes beside the face
        words = CONSENT_PALM if self.palm_only else CONSENT_FACE_AND_PALM if self.with_palm else CONSENT
        consent_text = label(words)
        card_layout.addWidget(consent_text)
        agree = QPushButton("I agree — start")
        agree.setProperty("role", "primary")
        agree.clicked.connect(self._start_capture)
        self.agree_button = agree
        card_layout.addWidget(agree, 0, Qt.AlignmentFlag.AlignLeft)
        consent_layout.addStretch(1)
        centred = QHBoxLayout()  # stretches, not an alignment flag: wrapped text keeps its height-for-width
        centred.addStretch(1)
        centred.addWidget(consent_card)
        centred.addStretch(1)
        consent_layout.addLayout(centred)
        consent_layout.addStretch(2)

        capture = QWidget()
        capture_layout = QHBoxLayout(capture)
        self.preview = CameraPreview()
        side_card = QFrame()
        side_card.setProperty("role", "card")
        side = QVBoxLayout(side_card)
        side.setContentsMargins(32, 28, 32, 28)
        side.setSpacing(16)
        capture_text = CAPTURE_PALM if self.palm_only else CAPTURE_FACE_AND_PALM if self.with_palm else CAPTURE_FACE
        side.addWidget(label(capture_text, "muted"))
        self.first_hint = PLACE_PALM if self.palm_only else LOOK
        self.hint = label(self.first_hint, "title")
        self.capture_progress = QProgressBar()
        self.capture_progress.setRange(0, SAMPLES_NEEDED)
        self.capture_count = label(f"0 of {SAMPLES_NEEDED} good frames", "muted")
        side.addStretch(1)
        side.addWidget(self.hint)
        side.addWidget(self.capture_progress)
        side.addWidget(self.capture_count)
        side.addStretch(2)
        capture_layout.setSpacing(24)
        capture_layout.addWidget(self.preview, 3)
        capture_layout.addWidget(side_card, 2)

        name_page = QWidget()
        name_layout = QVBoxLayout(name_page)
        name_layout.addWidget(label("What should I call you?", "title"))
        self.name_input = QLineEdit()
        self.name_input.setPlaceholderText("Your name")
        self.name_input.returnPressed.connect(self._save)
        self.save_button = QPushButton("Save")
        self.save_button.setProperty("role", "primary")
        self.save_button.clicked.connect(self._save)
        row = QHBoxLayout()
        row.addWidget(self.name_input, 1)
        row.addWidget(self.save_button)
        name_layout.addLayout(row)
        self.name_error = label("", "error")
        name_layout.addWidget(self.name_error)
        if not ctx.desktop:
            keyboard = OnScreenKeyboard(ctx.metrics)
            keyboard.set_target(self.name_input)
            keyboard.submitted.connect(self._save)
            name_layout.addWidget(keyboard)
        name_layout.addStretch(1)

        done_page = QWidget()
        done_layout = QVBoxLayout(done_page)
        self.done_text = label("", "title")
        finish = QPushButton("Start asking")
        finish.setProperty("role", "primary")
        finish.clicked.connect(lambda: self.navigate.emit(MAIN))
        done_layout.addStretch(1)
        done_layout.addWidget(self.done_text)
        done_layout.addWidget(label("From now on I recognise you each time you ask, and keep what you tell me."))
        done_layout.addWidget(finish, 0, Qt.AlignmentFlag.AlignLeft)
        done_layout.addStretch(2)

        for page in (consent, capture, name_page, done_page):
            self.pages.addWidget(page)
        self._timer = QTimer(self)
        self._timer.setInterval(SAMPLE_INTERVAL_MS)
        self._timer.timeout.connect(self._sample)
        # After the good frames, a liveness challenge (blink / head turn) proves a person, not a photo, is there.
        self._challenge_timer = QTimer(self)
        self._challenge_timer.setInterval(CHALLENGE_POLL_MS)
        self._challenge_timer.timeout.connect(self._poll_challenge)
        self._polling = False
        self.challenge_state = ""

    @property
    def step(self) -> str:
        return ("consent", "capture", "name", "done")[self.pages.currentIndex()]

    def _go(self, index: int) -> None:
        self.pages.setCurrentIndex(index)
        capture = "Enrol — your palm" if self.palm_only else "Enrol — look at the camera"
        self.title.setText(("Enrol — consent", capture, "Enrol — your name", "Welcome")[index])
        self.step_changed.emit(self.step)

    def on_enter(self) -> None:
        self._attempts = 0
        self.challenge_state = ""
        self.samples = []
        self.name_input.clear()
        self.name_error.setText("")
        self.capture_progress.setValue(0)
        self.capture_count.setText(f"0 of {SAMPLES_NEEDED} good frames")
        self._go(0)

    def on_leave(self) -> None:
        self._timer.stop()
        self._challenge_timer.stop()

    def on_frame(self, view: FrameView) -> None:
        if self.step == "capture":
            self.preview.show_frame(view)

    def _cancel(self) -> None:
        self._timer.stop()
        self._challenge_timer.stop()
        self.navigate.emit(MAIN)

    def _start_capture(self) -> None:
        self._go(1)
        self._timer.start()

    def _sample(self) -> None:
        if self._sampling or self.ctx.services is None:
            return
        self._sampling = True
        services = self.ctx.services
        submit(lambda _p: services.enrollment_sample(), self._got_sample, self._sample_failed, pool=self.ctx.pool)

    def _got_sample(self, sample: EnrollSample) -> None:
        self._sampling = False
        if self.step != "capture":
            return
        if sample.ok:
            self.samples.append(sample)
            palm_missing = self.with_palm and sample.palm is None
            self.hint.setText("Good — now your palm over the scanner too" if palm_missing else self._next_pose())
        else:
            self.hint.setText(sample.hint or self._pose())
        self.capture_progress.setValue(len(self.samples))
        self.capture_count.setText(f"{len(self.samples)} of {SAMPLES_NEEDED} good frames")
        if len(self.samples) >= SAMPLES_NEEDED:
            self._timer.stop()
            self._attempts = 0
            self._start_challenge()

    def _pose(self) -> str:
        """What to ask for the next sample: the palm, or the next face pose."""
        if self.palm_only:
            return PLACE_PALM
        return FACE_POSES[min(len(self.samples), len(FACE_POSES) - 1)]

    def _next_pose(self) -> str:
        """After a good sample: hold still, or, when the next sample wants another pose, ask for it and give the
        person time to turn."""
        wanted = self._pose()
        taken = len(self.samples)
        if self.palm_only or taken >= SAMPLES_NEEDED or wanted == FACE_POSES[taken - 1]:
            return "Good — hold still"
        self._timer.stop()
        QTimer.singleShot(POSE_CHANGE_MS, self, self._resume_capture)
        return wanted

    def _resume_capture(self) -> None:
        if self.step == "capture" and len(self.samples) < SAMPLES_NEEDED:
            self._timer.start()

    # ---- liveness challenge ---------------------------------------------------------------------------------

    def _start_challenge(self) -> None:
        self._attempts += 1
        services = self.ctx.require_services()
        submit(lambda _p: services.start_challenge(), self._challenge_started, self._sample_failed, pool=self.ctx.pool)

    def _challenge_started(self, view: ChallengeView) -> None:
        self._show_challenge(view)
        if view.status == "waiting":
            self._challenge_timer.start()

    def _poll_challenge(self) -> None:
        if self._polling or self.ctx.services is None:
            return
        self._polling = True
        services = self.ctx.services
        submit(
            lambda _p: services.challenge_status(), self._challenge_polled, self._challenge_error, pool=self.ctx.pool
        )

    def _challenge_error(self, message: str) -> None:
        self._polling = False
        self.hint.setText(message)

    def _challenge_polled(self, view: ChallengeView) -> None:
        self._polling = False
        if self.step != "capture":
            return
        self._show_challenge(view)

    def _show_challenge(self, view: ChallengeView) -> None:
        self.challenge_state = view.status
        if view.status == "waiting":
            self.hint.setText(view.prompt)
            self.capture_count.setText(view.message)
            return
        self._challenge_timer.stop()
        if view.status in ("passed", "off"):
            self._go(2)
            self.name_input.setFocus()
        elif self._attempts < CHALLENGE_ATTEMPTS:
            self.capture_count.setText(f"Not seen ({view.message}). Let's try again.")
            self._start_challenge()
        else:
            self.hint.setText("I could not confirm a live person in front of the camera")
            self.capture_count.setText(view.message)

    def _sample_failed(self, message: str) -> None:
        self._sampling = False
        self.hint.setText(message)

    def _save(self) -> None:
        name = self.name_input.text().strip()
        if not name:
            self.name_error.setText("Please type your name.")
            return
        self.save_button.setEnabled(False)
        services = self.ctx.require_services()
        samples = list(self.samples)
        submit(lambda _p: services.enroll(name, samples), self._saved, self._save_failed, pool=self.ctx.pool)

    def _saved(self, user: UserView) -> None:
        self.save_button.setEnabled(True)
        welcome = f"Welcome, {user.name}!"
        if self.with_palm and "palm" not in user.modalities:
            welcome += f"\n{PALM_NOT_ENROLLED}"
        self.done_text.setText(welcome)
        self._go(3)
        self.enrolled.emit(user)

    def _save_failed(self, message: str) -> None:
        self.save_button.setEnabled(True)
        self.name_error.setText(message)
