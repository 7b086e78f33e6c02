"""The assistant at a terminal in UTC-5: notes are dated, shown and read in the terminal's local time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from doubles import BagOfWordsEncoder, ScriptedLLM
from test_assistant import ALICE_FACE, TAU, face

from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.local_time import TerminalClock
from kiosk.memory import SqliteStore
from kiosk.retrieval import retriever

NEW_YORK = ZoneInfo("America/New_York")
THURSDAY_9PM = datetime(2026, 12, 3, 21, 0, tzinfo=NEW_YORK)  # 02:00 UTC on Friday 4 December


@pytest.fixture()
def terminal(tmp_path: Path, config: KioskConfig, monkeypatch: pytest.MonkeyPatch) -> Iterator[Assistant]:
    # the shipped relevance floor is MiniLM's; the bag-of-words encoder here scores on another scale
    monkeypatch.setattr(retriever, "DEFAULT_TUNING", replace(retriever.DEFAULT_TUNING, relevance_floor=0.0))
    config.memory.construction = "fast"
    config.ui.time_zone = "America/New_York"
    with SqliteStore(tmp_path / "memory.db") as store:
        user = store.add_user("Alice")
        store.set_templates(user.id, "face", ALICE_FACE[None, :], "c" * 64)
        assistant = Assistant(store, BagOfWordsEncoder(), ScriptedLLM(default="Tom."), config, thresholds={"face": TAU})
        yield assistant


def test_the_terminal_clock_follows_the_configured_zone(terminal: Assistant) -> None:
    assert terminal.clock.zone == NEW_YORK and terminal.clock.resolves_yearless_days


def test_a_note_said_at_nine_pm_is_stamped_shown_and_anchored_on_that_local_day(terminal: Assistant) -> None:
    terminal.clock = TerminalClock(NEW_YORK, fixed=THURSDAY_9PM)
    note_id = terminal.remember("Dinner with Tom tonight, the dentist next Tuesday", face(ALICE_FACE))
    note = terminal.store.get_note(int(note_id or 0))
    assert note is not None and note.timestamp.isoformat() == "2026-12-04T02:00:00+00:00"  # stored as the instant
    assert note.context == "Alice said this on 3 December 2026, 9:00 pm."
    terminal.answer("Who is coming to dinner tonight?", face(ALICE_FACE))
    llm = terminal.llm
    assert isinstance(llm, ScriptedLLM)
    prompt = llm.calls[-1].text
    assert "[3 December 2026]" in prompt and "4 December" not in prompt
    assert "Dinner with Tom tonight (3 December 2026), the dentist next Tuesday (8 December 2026)" in prompt


def test_only_a_terminal_clock_resolves_days_without_a_year(terminal: Assistant) -> None:
    """The LoCoMo replay's clock does not resolve them (kiosk.eval.conditions): its retrieval, and so its prompts,
    stay as they were; a terminal's question carries its local time."""
    seen: list[object] = []
    search = terminal.retriever.retrieve

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs.get("asked_at"))
        return search(*args, **kwargs)  # type: ignore[arg-type]

    terminal.remember("Dinner with Tom on the 14th", face(ALICE_FACE))
    terminal.retriever.retrieve = spy  # type: ignore[method-assign]
    terminal.clock = TerminalClock(NEW_YORK, fixed=THURSDAY_9PM, resolves_yearless_days=False)
    terminal.retrieve("What is on the 14th?", face(ALICE_FACE))
    terminal.clock = TerminalClock(NEW_YORK, fixed=THURSDAY_9PM)
    terminal.retrieve("What is on the 14th?", face(ALICE_FACE))
    assert seen == [None, THURSDAY_9PM]


def test_a_day_already_past_on_the_terminal_s_day_is_not_given_as_when_something_is(terminal: Assistant) -> None:
    terminal.clock = TerminalClock(NEW_YORK, fixed=THURSDAY_9PM)
    terminal.remember("My blood test is on 1 December 2026 at 9", face(ALICE_FACE))
    terminal.llm = ScriptedLLM(default="1 December 2026")
    assert terminal.answer("When is my blood test?", face(ALICE_FACE)).answer == UNKNOWN_ANSWER  # two days ago
    terminal.clock = TerminalClock(NEW_YORK, fixed=datetime(2026, 11, 30, 9, 0, tzinfo=NEW_YORK))
    assert terminal.answer("When is my blood test?", face(ALICE_FACE)).answer == "Tuesday 1 December at 9"
    terminal.clock = TerminalClock(NEW_YORK, fixed=THURSDAY_9PM, resolves_yearless_days=False)  # a replay
    assert terminal.answer("When is my blood test?", face(ALICE_FACE)).answer == "1 December 2026"


def test_my_memories_lists_each_note_at_its_local_time(terminal: Assistant, tmp_path: Path) -> None:
    from kiosk.app.memories import OwnMemories
    from kiosk.app.views import Presence, Verification
    from kiosk.identity.gate import Identity
    from kiosk.security.audit import AuditLog

    terminal.clock = TerminalClock(NEW_YORK, fixed=THURSDAY_9PM)
    terminal.remember("Dinner with Tom tonight", face(ALICE_FACE))
    alice = Identity(user_id=1, name="Alice", score=0.9)
    verification = Verification(Presence("recognised", alice), face(ALICE_FACE))
    (view,) = OwnMemories(terminal, AuditLog(tmp_path), lambda: None).list_notes(verification)
    assert view.timestamp.isoformat() == "2026-12-03T21:00:00-05:00"
