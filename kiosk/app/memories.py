"""A person's own memories at the kiosk: list, restore, delete one, mark one sensitive (or not), or forget me
entirely.

Every action is authorised by the gate: the verification's probe is decided again under the answer path's
rule (Assistant.verify), and only the single person it verifies, the one the screen was opened for, may act.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from kiosk.app.views import NoteView, Verification
from kiosk.assistant import Assistant
from kiosk.errors import ProbeError, StoreError
from kiosk.local_time import local, zone_named
from kiosk.memory.sensitivity import validate_category
from kiosk.security.audit import AuditLog


class OwnMemories:
    def __init__(self, assistant: Assistant, audit: AuditLog, on_forgotten: Callable[[], None]) -> None:
        self.assistant = assistant
        self.store = assistant.store
        self.audit = audit
        self._on_forgotten = on_forgotten  # someone left: the badge must stop recognising them

    def owner(self, verification: Verification) -> int:
        """The person this verification authorises, by the gate's decision on its probe; ProbeError otherwise."""
        decision = self.assistant.verify(verification.probe, record=False)
        owner = decision.verified_user_id
        presence = verification.presence
        if owner is None or presence.state != "recognised" or presence.user_id != owner:
            raise ProbeError("you were not recognised just now", "stand alone in front of the camera")
        return owner

    def list_notes(self, verification: Verification) -> list[NoteView]:
        owner = self.owner(verification)
        notes = self.store.list_notes(owner)
        zone = zone_named(self.assistant.config.ui.time_zone)  # shown as said: in the terminal's time zone
        return [
            NoteView(int(n.id or 0), n.content, local(n.timestamp, zone), None, n.sensitivity, n.scope, n.archived)
            for n in reversed(notes)
        ]

    def _own_note(self, owner: int, note_id: int) -> None:
        note = self.store.get_note(note_id)
        if note is None or note.owner_id != owner:
            raise StoreError("that memory is not yours or no longer exists", "reopen your memories")

    def restore_note(self, verification: Verification, note_id: int) -> None:
        owner = self.owner(verification)
        self._own_note(owner, note_id)
        self.store.restore_note(note_id, datetime.now(UTC))

    def delete_note(self, verification: Verification, note_id: int) -> None:
        owner = self.owner(verification)
        self._own_note(owner, note_id)
        self.store.delete_note(note_id)
        self.assistant.retriever.forget_owner(owner)
        self.audit.record("note-deleted", user_id=owner, note_id=note_id, by="owner")

    def mark_note(self, verification: Verification, note_id: int, sensitivity: str | None) -> None:
        """The owner sets a note's sensitive category (None or 'none': not sensitive); their mark stands."""
        category = validate_category(sensitivity)
        owner = self.owner(verification)
        self._own_note(owner, note_id)
        self.store.mark_sensitivity(note_id, category, "owner")
        self.assistant.retriever.forget_owner(owner)
        self.audit.record("note-marked", user_id=owner, note_id=note_id, sensitive=category is not None, by="owner")

    def forget_me(self, verification: Verification) -> None:
        owner = self.owner(verification)
        self.store.delete_user(owner)
        forget_cached_person(self.assistant, owner)
        self._on_forgotten()
        self.audit.record("user-forgotten", user_id=owner, by="self")


def forget_cached_person(assistant: Assistant, user_id: int) -> None:
    """After a person's erasure: evict cached retrieval results that held their notes, which were in their own
    partition and in any group's or the public one (the store erases what they wrote in every scope)."""
    store = assistant.store
    public = store.public_owner_id()
    shared = [group.id for group in store.list_groups()] + ([public] if public is not None else [])
    for owner in (user_id, *shared):
        assistant.retriever.forget_owner(owner)
