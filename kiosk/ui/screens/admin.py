"""Admin screen behind a PIN (and, on a face-camera terminal, a liveness check): calibration with histograms and
operating points, users, groups, models and gate.

Who may do what is decided by the core's AdminAccess (kiosk/security/admin_access.py); this screen renders its
steps. Every action, including each PIN attempt and each liveness check, goes to the audit log.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from kiosk.app.views import AdminSettings, ChallengeView, FrameView, UserView
from kiosk.security.admin_access import AccessStep, AdminAction
from kiosk.ui.context import AppContext
from kiosk.ui.screens.admin_calibration import CalibrationTab
from kiosk.ui.screens.admin_check import LivenessCheck
from kiosk.ui.screens.admin_groups import GroupsTab
from kiosk.ui.screens.base import MAIN, Screen, label
from kiosk.ui.widgets.pinpad import PinPad
from kiosk.ui.workers import submit


class PinGate(QWidget):
    """First run: choose a PIN twice. Later: enter it. The core's AdminAccess decides what comes next."""

    stepped = Signal(object)  # AccessStep after a PIN was entered or chosen

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self._first_pin: str | None = None
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        self.prompt = label("", "title")
        self.prompt.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message = label("", "muted")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.note = label(ctx.admin_access.rule.note, "muted")
        self.note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.pad = PinPad(ctx.metrics)
        self.pad.entered.connect(self._entered)
        layout.addWidget(self.prompt)
        layout.addWidget(self.message)
        layout.addWidget(self.pad, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.note)
        layout.addStretch(2)

    def reset(self, message: str = "") -> None:
        self._first_pin = None
        self.pad.clear()
        if self.ctx.admin_pin.is_set():
            self.prompt.setText("Enter the admin PIN")
            self.message.setText(message)
        else:
            self.prompt.setText("Choose an admin PIN")
            self.message.setText("First start: choose 4 to 12 digits. Only its salted hash is stored.")

    def _entered(self, pin: str) -> None:
        pin_store, access = self.ctx.admin_pin, self.ctx.admin_access
        if not pin_store.is_set():
            if self._first_pin is None:
                if not (pin.isdigit() and 4 <= len(pin) <= 12):
                    self.message.setText("The PIN must be 4 to 12 digits.")
                    return
                self._first_pin = pin
                self.prompt.setText("Enter the same PIN again")
                self.message.setText("")
                return
            if pin != self._first_pin:
                self._first_pin = None
                self.prompt.setText("Choose an admin PIN")
                self.message.setText("The two PINs differ. Start again.")
                return
            pin_store.set_pin(pin)
            self.stepped.emit(access.pin_chosen())
            return
        try:
            step = access.enter_pin(pin)
        except Exception as exc:  # a damaged PIN file must not take the kiosk down
            self.message.setText(str(exc))
            self.ctx.audit.record("admin-pin-error", error=str(exc))
            return
        self.message.setText(step.message)
        self.stepped.emit(step)


class AdminScreen(Screen):
    calibration_ready = Signal(object)
    action_done = Signal(str)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        root = QVBoxLayout(self)
        root.setContentsMargins(40, 28, 40, 28)
        root.setSpacing(16)
        header = QHBoxLayout()
        header.addWidget(label("Administration", "title", wrap=False), 1)
        close = QPushButton("Close")
        close.clicked.connect(self._close)
        header.addWidget(close)
        root.addLayout(header)
        self.stack = QStackedWidget()
        self.gate = PinGate(ctx)
        self.gate.stepped.connect(self._show_step)
        self.check = LivenessCheck(ctx)
        self.check.polled.connect(self._challenge_polled)
        self.check.cancelled.connect(self._challenge_cancelled)
        self._after_check: Callable[[], None] | None = None  # the destructive action a running check guards
        self.calibration_tab = CalibrationTab(ctx, self._guarded)
        self.calibration_tab.ready.connect(self.calibration_ready)
        self.calibration_tab.done.connect(self.action_done)
        self.groups_tab = GroupsTab(ctx, self._guarded)
        self.groups_tab.done.connect(self.action_done)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.calibration_tab, "Calibration")
        self.tabs.addTab(self._users_tab(), "Users")
        self.tabs.addTab(self._settings_tab(), "Models && gate")
        self.tabs.addTab(self.groups_tab, "Groups")
        self.stack.addWidget(self.gate)
        self.stack.addWidget(self.check)
        self.stack.addWidget(self.tabs)
        root.addWidget(self.stack, 1)

    # --- navigation and access ----------------------------------------------------------------------
    def on_enter(self) -> None:
        self.ctx.admin_access.lock()
        self.stack.setCurrentWidget(self.gate)
        self.gate.reset()

    def on_leave(self) -> None:
        access = self.ctx.admin_access
        if self.check.running and access.pending is not None:
            self.check.stop()  # walking away from a running check is a failed check, like Cancel
            access.challenge_update("failed", "", "the admin screen was left during the check")
        access.lock()  # leaving always locks again
        self._after_check = None
        self.stack.setCurrentWidget(self.gate)

    def on_frame(self, view: FrameView) -> None:
        self.check.on_frame(view)

    @property
    def unlocked(self) -> bool:
        return self.ctx.admin_access.unlocked

    def _show_step(self, step: AccessStep) -> None:
        if step.kind == "pin":
            self._after_check = None
            self.check.stop()
            self.stack.setCurrentWidget(self.gate)
            self.gate.reset(step.message)
        elif step.kind == "challenge":
            self.stack.setCurrentWidget(self.check)
            self.check.start(step.action, step.message)
        elif step.kind == "granted":
            if step.action == "unlock":
                self._unlocked()
            else:
                self.stack.setCurrentWidget(self.tabs)
                work, self._after_check = self._after_check, None
                if work is not None:
                    work()
        else:  # denied: still unlocked, the action was not done
            self._after_check = None
            self.stack.setCurrentWidget(self.tabs)
            self._status_for(step.action).setText(step.message)
            self.action_done.emit(f"{step.action}-denied")

    def _challenge_polled(self, view: ChallengeView) -> None:
        step = self.ctx.admin_access.challenge_update(view.status, view.prompt, view.message)
        if step.kind == "challenge":
            self.check.show_prompt(step.message, view.message)
        else:
            self._show_step(step)

    def _challenge_cancelled(self) -> None:
        self._show_step(self.ctx.admin_access.challenge_update("failed", "", "cancelled"))

    def _guarded(self, action: AdminAction, work: Callable[[], None]) -> None:
        """Run a destructive action now, or after the liveness check AdminAccess asks for."""
        step = self.ctx.admin_access.request(action)
        if step.kind == "granted":
            work()
            return
        self._after_check = work if step.kind == "challenge" else None
        self._show_step(step)

    def _status_for(self, action: str) -> QLabel:
        statuses = {"remove-user": self.users_status, "delete-group": self.groups_tab.groups_status}
        return statuses.get(action, self.calibration_tab.cal_status)

    def _unlocked(self) -> None:
        self.stack.setCurrentWidget(self.tabs)
        self.refresh_users()
        self.groups_tab.refresh_groups()
        self._load_settings()

    def _close(self) -> None:
        if self.unlocked:
            self.ctx.audit.record("admin-logout")
        self.navigate.emit(MAIN)

    # --- users --------------------------------------------------------------------------------------
    def _users_tab(self) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        self.users = QListWidget()
        self.users_status = label("", "muted")
        row = QHBoxLayout()
        self.remove_button = QPushButton("Remove selected user")
        self.remove_button.setProperty("role", "danger")
        self.remove_button.clicked.connect(self._confirm_remove)
        self.confirm_remove = QPushButton("Yes, remove them and all their memories")
        self.confirm_remove.setProperty("role", "danger")
        self.confirm_remove.clicked.connect(self.remove_selected_user)
        self.confirm_remove.hide()
        row.addWidget(self.remove_button)
        row.addWidget(self.confirm_remove)
        row.addStretch(1)
        layout.addWidget(self.users, 1)
        layout.addWidget(self.users_status)
        layout.addLayout(row)
        return tab

    def refresh_users(self) -> None:
        services = self.ctx.require_services()
        submit(lambda _p: services.list_users(), self._show_users, self.users_status.setText, pool=self.ctx.pool)

    def _show_users(self, users: list[UserView]) -> None:
        self.users.clear()
        for user in users:
            item = QListWidgetItem(
                f"{user.name}    ·    {user.notes} memories    ·    {', '.join(user.modalities) or '—'}"
            )
            item.setData(Qt.ItemDataRole.UserRole, user.id)
            self.users.addItem(item)
        self.users_status.setText(f"{len(users)} enrolled users")
        self.action_done.emit("users-listed")

    def _confirm_remove(self) -> None:
        if self.users.currentItem() is not None:
            self.confirm_remove.show()

    def remove_selected_user(self) -> None:
        self.confirm_remove.hide()
        item = self.users.currentItem()
        if item is None:
            return
        user_id = int(item.data(Qt.ItemDataRole.UserRole))
        self._guarded("remove-user", lambda: self._remove_user(user_id))

    def _remove_user(self, user_id: int) -> None:
        services = self.ctx.require_services()

        def done(_result: object) -> None:
            self.ctx.audit.record("user-removed", user_id=user_id)
            self.refresh_users()

        def failed(message: str) -> None:
            self.users_status.setText(message)
            self.ctx.audit.record("user-remove-failed", user_id=user_id, error=message)

        submit(lambda _p: services.delete_user(user_id), done, failed, pool=self.ctx.pool)

    # --- models and gate policy ---------------------------------------------------------------------
    def _settings_tab(self) -> QWidget:
        tab = QWidget()
        layout = QGridLayout(tab)
        layout.setVerticalSpacing(18)
        self.llm_choice = QComboBox()
        self.gate_choice = QComboBox()
        self.settings_status = label("", "muted")
        apply = QPushButton("Apply")
        apply.setProperty("role", "primary")
        apply.clicked.connect(self.apply_settings)
        layout.addWidget(label("Language model"), 0, 0)
        layout.addWidget(self.llm_choice, 0, 1)
        layout.addWidget(label("Gate policy"), 1, 0)
        layout.addWidget(self.gate_choice, 1, 1)
        layout.addWidget(
            label(
                "best-match: only the single best identity, if it clearly beats the runner-up (shared terminals). "
                "threshold: every enrolled identity above τ.",
                "muted",
            ),
            2,
            0,
            1,
            2,
        )
        layout.addWidget(apply, 3, 1, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(self.settings_status, 4, 0, 1, 2)
        layout.setRowStretch(5, 1)
        layout.setColumnStretch(1, 1)
        return tab

    def _load_settings(self) -> None:
        services = self.ctx.require_services()
        submit(lambda _p: services.settings(), self._show_settings, self.settings_status.setText, pool=self.ctx.pool)

    def _show_settings(self, settings: AdminSettings) -> None:
        self.llm_choice.clear()
        self.llm_choice.addItems(list(settings.llm_choices))
        self.llm_choice.setCurrentText(settings.llm_model)
        self.gate_choice.clear()
        self.gate_choice.addItems(list(settings.gate_choices))
        self.gate_choice.setCurrentText(settings.gate_policy)

    def apply_settings(self) -> None:
        llm, policy = self.llm_choice.currentText(), self.gate_choice.currentText()
        services = self.ctx.require_services()
        self.settings_status.setText("Applying… (loading a model can take a while)")

        def done(_result: object) -> None:
            self.settings_status.setText(f"Now using {llm} with the {policy} gate.")
            self.ctx.audit.record("settings-applied", llm_model=llm, gate_policy=policy)
            self.action_done.emit("settings-applied")

        def failed(message: str) -> None:
            self.settings_status.setText(f"Not applied: {message}")
            self.ctx.audit.record("settings-failed", llm_model=llm, gate_policy=policy, error=message)
            self.action_done.emit("settings-failed")

        submit(lambda _p: services.apply_settings(llm, policy), done, failed, pool=self.ctx.pool)
