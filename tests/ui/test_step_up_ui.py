"""Step-up on screen (issue #38.1): "I have a private note about this…" is shown, and the question is asked once
more, with a fresh verification, after the camera has had time to gather frames."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kiosk.app.views import AnswerView, TokenSink, Verification
from kiosk.ui.screens import main as main_screen

from .conftest import WindowFactory
from .fakes import FakeServices
from .test_app_flows import ask, wait_for_badge

STEP_UP = "I have a private note about this. Look at the camera for a moment and ask again."


def stepping_up(fake: FakeServices, times: int) -> FakeServices:
    """The first `times` answers are step-ups (no notes); the rest are the fake's usual answers."""
    answer = fake.answer
    asked: list[str] = []

    def step_up_first(question: str, verification: Verification, on_token: TokenSink) -> AnswerView:
        asked.append(question)
        view = answer(question, verification, on_token)
        if len(asked) <= times:
            return replace(view, text=STEP_UP, notes=(), decision="fallback", step_up="look at the camera")
        return view

    fake.answer = step_up_first  # type: ignore[method-assign]
    return fake


def test_a_step_up_answer_asks_again_once_with_a_fresh_probe(
    qtbot, make_window: WindowFactory, fake: FakeServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(main_screen, "STEP_UP_WAIT_MS", 50)
    window = make_window(stepping_up(fake, 1))
    wait_for_badge(qtbot, window, "Ada")
    answers: list[object] = []
    statuses: list[str] = []  # read when each answer arrives: the re-ask may change it before ask() returns
    window.main.answer_done.connect(answers.append)
    window.main.answer_done.connect(lambda _: statuses.append(window.main.status.text()))
    first = ask(qtbot, window, "am I allergic to penicillin?")
    assert isinstance(first, AnswerView) and first.text == STEP_UP
    assert "Asking again" in statuses[0]
    qtbot.waitUntil(lambda: len(answers) == 2, timeout=10_000)
    again = answers[1]
    assert isinstance(again, AnswerView) and again.notes  # answered from memory the second time
    assert fake.verifications == 2  # each ask re-verified at send time
    bubbles = window.main.conversation.answers()
    assert STEP_UP in bubbles[0].body.text() and "Lisbon" in bubbles[-1].body.text()
    qtbot.wait(300)
    assert [text for text, _ in fake.remembered] == ["am I allergic to penicillin?"]  # the re-ask is not a new note


def test_only_one_automatic_re_ask(
    qtbot, make_window: WindowFactory, fake: FakeServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(main_screen, "STEP_UP_WAIT_MS", 50)
    window = make_window(stepping_up(fake, 5))
    wait_for_badge(qtbot, window, "Ada")
    answers: list[object] = []
    window.main.answer_done.connect(answers.append)
    ask(qtbot, window, "am I allergic to penicillin?")
    qtbot.waitUntil(lambda: len(answers) == 2, timeout=10_000)
    qtbot.wait(500)
    assert fake.verifications == 2 and len(answers) == 2
    assert not window.main.busy()
