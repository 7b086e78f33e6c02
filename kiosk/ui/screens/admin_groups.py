"""The admin screen's groups tab: create groups, add and remove members, delete a group (a destructive action:
it may ask for the liveness check first)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from kiosk.app.views import GroupView, UserView
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import label
from kiosk.ui.screens.guard import Guard
from kiosk.ui.workers import submit


class GroupsTab(QWidget):
    done = Signal(str)  # what just happened, for the screen's action_done

    def __init__(self, ctx: AppContext, guarded: Guard) -> None:
        super().__init__()
        self.ctx = ctx
        self._guarded = guarded
        self._build()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
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
        self.done.emit("groups-listed")

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
            self.done.emit(f"{action}-failed")

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
