"""Which yes/no questions ask whether something has been done, and what says it is still to do
(kiosk.llm.done_questions; the answers they withdraw are tested through kiosk.llm.choices in test_choices.py)."""

from __future__ import annotations

import pytest

from kiosk.llm.done_questions import asks_if_done, says_still_to_do


@pytest.mark.parametrize(
    ("asked", "done"),
    [
        ("Has Ania paid our gas bill?", True),
        ("Did Stan have another fall this week?", True),
        ("Is Stan's flu shot booked?", True),
        ("Has anyone picked up Mom's metformin refill yet?", True),
        ("Have I got to set the alarm?", False),  # a duty
        ("Is the pool open on Cup Day?", False),
        ("Is Halina having a bath on Saturday?", False),
    ],
)
def test_a_question_whether_something_was_done(asked: str, done: bool) -> None:
    assert asks_if_done(asked) is done


@pytest.mark.parametrize(
    ("text", "to_do"),
    [
        ("The gas bill is due on the 30th.", True),
        ("Somebody pick it up before Saturday.", True),
        ("Luca, can you pay it?", True),
        ("The boiler man comes Monday to fix it.", True),
        ("Keep taking the statin at night like before.", False),  # "before" with no day after it
        ("Paid the water bill this morning.", False),
    ],
)
def test_what_says_it_is_still_to_do(text: str, to_do: bool) -> None:
    assert says_still_to_do(text) is to_do
