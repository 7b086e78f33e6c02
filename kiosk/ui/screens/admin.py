"""Admin screen behind a PIN (and, on a face-camera terminal, a liveness check): calibration with histograms and
operating points, users, groups, models and gate.

Who may do what is decided by the core's AdminAccess (kiosk/security/admin_access.py); this screen renders its
steps. Every action, including each PIN attempt and each liveness check, goes to the audit log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from kiosk.security.admin_access import AccessStep, AdminAction
from kiosk.ui.context import AppContext
from kiosk.ui.screens.admin_check import LivenessCheck
from kiosk.ui.screens.base import MAIN, Screen, label
from kiosk.ui.services import AdminSettings, CalibrationView, ChallengeView, FrameView, GroupView, UserView
from kiosk.ui.widgets.histogram import ScoreHistogram
from kiosk.ui.widgets.pinpad import PinPad
from kiosk.ui.workers import submit

RULE_NAMES = {
    "tau_d": "Density intersection τ_D (paper)",
    "eer": "Equal error rate",
    "far": "Target false-accept rate",
    "strict": "Stricter of τ_D and target FAR (shared terminals)",
}


def _pct(value: float) -> str:
    return f"{value * 100:.2f} %" if value >= 1e-4 else f"{value * 100:.3f} %"


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
        self.result: CalibrationView | None = None
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
        self.tabs = QTabWidget()
        self.tabs.addTab(self._calibration_tab(), "Calibration")
        self.tabs.addTab(self._users_tab(), "Users")
        self.tabs.addTab(self._settings_tab(), "Models && gate")
        self.tabs.addTab(self._groups_tab(), "Groups")
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
        return {"remove-user": self.users_status, "delete-group": self.groups_status}.get(action, self.cal_status)

    def _unlocked(self) -> None:
        self.stack.setCurrentWidget(self.tabs)
        self.refresh_users()
        self.refresh_groups()
        self._load_settings()

    def _close(self) -> None:
        if self.unlocked:
            self.ctx.audit.record("admin-logout")
        self.navigate.emit(MAIN)

    # --- calibration --------------------------------------------------------------------------------
    def _calibration_tab(self) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        layout.setSpacing(14)
        row = QHBoxLayout()
        self.modality = QComboBox()
        self.modality.addItems(["face", "palm"])
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("Folder of labelled images (manifest.csv or pairs.txt)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        browse.setVisible(self.ctx.desktop)
        self.run_button = QPushButton("Run calibration")
        self.run_button.setProperty("role", "primary")
        self.run_button.clicked.connect(self.run_calibration)
        row.addWidget(self.modality)
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        row.addWidget(self.run_button)
        layout.addLayout(row)
        self.cal_progress = QProgressBar()
        self.cal_progress.setRange(0, 1000)
        self.cal_status = label("Pick a data folder and run a calibration.", "muted")
        layout.addWidget(self.cal_progress)
        layout.addWidget(self.cal_status)
        body = QHBoxLayout()
        self.histogram = ScoreHistogram()
        body.addWidget(self.histogram, 3)
        side_card = QFrame()
        side_card.setProperty("role", "card")
        side = QVBoxLayout(side_card)
        side.setContentsMargins(20, 18, 20, 18)
        side.addWidget(label("Operating point", "title"))
        self.rules = QButtonGroup(self)
        self.rules.setExclusive(True)
        self.rule_buttons: dict[str, QRadioButton] = {}
        self.rule_figures: dict[str, QLabel] = {}
        for rule, name in RULE_NAMES.items():
            button = QRadioButton(name)
            button.setEnabled(False)
            button.toggled.connect(lambda on, r=rule: self._rule_picked(r) if on else None)
            figures = label("", "muted")
            figures.setContentsMargins(self.ctx.metrics.font_px + 14, 0, 0, 8)
            self.rules.addButton(button)
            self.rule_buttons[rule] = button
            self.rule_figures[rule] = figures
            side.addWidget(button)
            side.addWidget(figures)
        side.addStretch(1)
        self.counts = label("", "muted")
        side.addWidget(self.counts)
        self.apply_button = QPushButton("Apply this threshold")
        self.apply_button.setProperty("role", "primary")
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(self.apply_calibration)
        side.addWidget(self.apply_button)
        body.addWidget(side_card, 2)
        layout.addLayout(body, 1)
        return tab

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Calibration data folder")
        if folder:
            self.folder.setText(folder)

    def run_calibration(self) -> None:
        folder = Path(self.folder.text().strip())
        modality = self.modality.currentText()
        if not self.folder.text().strip() or not folder.is_dir():
            self.cal_status.setText(f"Not a folder: {folder}")
            return
        self.run_button.setEnabled(False)
        self.apply_button.setEnabled(False)
        self.cal_progress.setValue(0)
        self.cal_status.setText("Calibrating…")
        self.ctx.audit.record("calibration-run", modality=modality, folder=str(folder))
        services = self.ctx.require_services()
        submit(
            lambda progress: services.run_calibration(modality, folder, progress),
            self._calibrated,
            self._calibration_failed,
            self._calibration_progress,
            pool=self.ctx.pool,
        )

    def _calibration_progress(self, fraction: float, message: str) -> None:
        self.cal_progress.setValue(int(max(0.0, min(1.0, fraction)) * 1000))
        self.cal_status.setText(message)

    def _calibrated(self, result: CalibrationView) -> None:
        self.result = result
        self.run_button.setEnabled(True)
        self.cal_progress.setValue(1000)
        self.histogram.set_scores(result.genuine, result.impostor, result.thresholds)
        for rule, button in self.rule_buttons.items():
            available = rule in result.thresholds
            button.setEnabled(available)
            text = "not available"
            if available:
                text = f"τ {result.thresholds[rule]:.3f} · FAR {_pct(result.far[rule])} · FRR {_pct(result.frr[rule])}"
                if rule in result.unresolved:
                    text += f"\n⚠ {result.unresolved[rule]}"
            self.rule_figures[rule].setText(text)
        eer = f" · EER {_pct(result.eer)}" if result.eer is not None else ""
        self.counts.setText(
            f"{result.counts.get('genuine', 0):,} genuine and {result.counts.get('impostor', 0):,} impostor pairs{eer}"
        )
        self.cal_status.setText("Done. Pick the operating point, then apply it.")
        self.rule_buttons[result.default_rule].setChecked(True)
        self._rule_picked(result.default_rule)
        self.apply_button.setEnabled(True)
        self.ctx.audit.record(
            "calibration-done", modality=result.modality, counts=result.counts, thresholds=result.thresholds
        )
        self.calibration_ready.emit(result)

    def _calibration_failed(self, message: str) -> None:
        self.run_button.setEnabled(True)
        self.cal_status.setText(f"Calibration failed: {message}")
        self.ctx.audit.record("calibration-failed", error=message)
        self.action_done.emit("calibration-failed")

    def _rule_picked(self, rule: str) -> None:
        self.histogram.choose(rule)

    def chosen_rule(self) -> str | None:
        for rule, button in self.rule_buttons.items():
            if button.isChecked():
                return rule
        return None

    def apply_calibration(self) -> None:
        rule = self.chosen_rule()
        if self.result is None or rule is None:
            return
        result = self.result
        self._guarded("apply-calibration", lambda: self._apply_calibration(result, rule))

    def _apply_calibration(self, result: CalibrationView, rule: str) -> None:
        services = self.ctx.require_services()

        def done(tau: float) -> None:
            self.cal_status.setText(f"Applied: the {result.modality} gate now uses τ = {tau:.3f} ({rule}).")
            self.ctx.audit.record("calibration-applied", modality=result.modality, rule=rule, threshold=tau)
            self.action_done.emit("calibration-applied")

        def failed(message: str) -> None:
            self.cal_status.setText(f"Not applied: {message}")
            self.ctx.audit.record("calibration-apply-failed", rule=rule, error=message)
            self.action_done.emit("calibration-apply-failed")

        submit(lambda _p: services.apply_calibration(result, rule), done, failed, pool=self.ctx.pool)

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

    # --- groups -------------------------------------------------------------------------------------
    def _groups_tab(self) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        layout.addWidget(
            label(
                "Any verified member of a group reads the group's memories (a family, a ward, a team). "
                "Public memories need no recognition at all.",
                "muted",
            )
        )
        self.groups = QListWidget()
        self.groups_status = label("", "muted")
        create = QHBoxLayout()
        self.group_name = QLineEdit()
        self.group_name.setPlaceholderText("New group name")
        self.add_group_button = QPushButton("Create group")
        self.add_group_button.clicked.connect(self.create_group)
        create.addWidget(self.group_name, 1)
        create.addWidget(self.add_group_button)
        membership = QHBoxLayout()
        self.member_choice = QComboBox()
        self.add_member_button = QPushButton("Add to selected group")
        self.add_member_button.clicked.connect(lambda: self.set_member(True))
        self.remove_member_button = QPushButton("Remove from selected group")
        self.remove_member_button.clicked.connect(lambda: self.set_member(False))
        membership.addWidget(self.member_choice, 1)
        membership.addWidget(self.add_member_button)
        membership.addWidget(self.remove_member_button)
        removal = QHBoxLayout()
        self.delete_group_button = QPushButton("Delete selected group")
        self.delete_group_button.setProperty("role", "danger")
        self.delete_group_button.clicked.connect(self._confirm_delete_group)
        self.confirm_delete_group = QPushButton("Yes, delete the group and all its memories")
        self.confirm_delete_group.setProperty("role", "danger")
        self.confirm_delete_group.clicked.connect(self.delete_selected_group)
        self.confirm_delete_group.hide()
        removal.addWidget(self.delete_group_button)
        removal.addWidget(self.confirm_delete_group)
        removal.addStretch(1)
        layout.addWidget(self.groups, 1)
        layout.addLayout(create)
        layout.addLayout(membership)
        layout.addWidget(self.groups_status)
        layout.addLayout(removal)
        return tab

    def refresh_groups(self) -> None:
        services = self.ctx.require_services()
        submit(
            lambda _p: (services.list_groups(), services.list_users()),
            self._show_groups,
            self.groups_status.setText,
            pool=self.ctx.pool,
        )

    def _show_groups(self, result: tuple[list[GroupView], list[UserView]]) -> None:
        groups, users = result
        selected = self._selected_group()
        self.groups.clear()
        for group in groups:
            members = ", ".join(name for _, name in group.members) or "no members"
            item = QListWidgetItem(f"{group.name}    ·    {members}    ·    {group.notes} memories")
            item.setData(Qt.ItemDataRole.UserRole, group.id)
            self.groups.addItem(item)
            if group.id == selected:
                self.groups.setCurrentItem(item)
        chosen = self.member_choice.currentData()
        self.member_choice.clear()
        for user in users:
            self.member_choice.addItem(user.name, user.id)
        if chosen is not None and (index := self.member_choice.findData(chosen)) >= 0:
            self.member_choice.setCurrentIndex(index)
        self.groups_status.setText(f"{len(groups)} groups")
        self.action_done.emit("groups-listed")

    def _selected_group(self) -> int | None:
        item = self.groups.currentItem()
        return int(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def _group_action(self, action: str, work: Callable[[], object], **details: str | int) -> None:
        def done(_result: object) -> None:
            self.ctx.audit.record(action, **details)
            self.group_name.clear()
            self.refresh_groups()

        def failed(message: str) -> None:
            self.groups_status.setText(message)
            self.ctx.audit.record(f"{action}-failed", error=message, **details)
            self.action_done.emit(f"{action}-failed")

        submit(lambda _p: work(), done, failed, pool=self.ctx.pool)

    def create_group(self) -> None:
        name = self.group_name.text().strip()
        if not name:
            self.groups_status.setText("Type a name for the new group first.")
            return
        services = self.ctx.require_services()
        self._group_action("group-created", lambda: services.add_group(name), name=name)

    def set_member(self, member: bool) -> None:
        group_id, user_id = self._selected_group(), self.member_choice.currentData()
        if group_id is None or user_id is None:
            self.groups_status.setText("Select a group and a person first.")
            return
        services = self.ctx.require_services()
        action = "member-added" if member else "member-removed"
        work = lambda: services.set_member(group_id, int(user_id), member)  # noqa: E731
        self._group_action(action, work, group_id=group_id, user_id=int(user_id))

    def _confirm_delete_group(self) -> None:
        if self._selected_group() is not None:
            self.confirm_delete_group.show()

    def delete_selected_group(self) -> None:
        self.confirm_delete_group.hide()
        group_id = self._selected_group()
        if group_id is None:
            return
        services = self.ctx.require_services()
        self._guarded(
            "delete-group",
            lambda: self._group_action("group-deleted", lambda: services.delete_group(group_id), group_id=group_id),
        )

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
