"""A day the notes name only as when something is not is no answer to when it is (kiosk.llm.denied_days)."""

from __future__ import annotations

import pytest

from kiosk.llm.denied_days import checked_denied_days
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

NOTES = """Notes of Harold, oldest first:
<notes>
[16 November 2026]
Harold: The pool is closed for repairs, no swimming lessons until the 30th (30 November 2026).
[18 November 2026]
Harold: Sarah rang. She can't come on Wednesday (25 November 2026) now, she's coming Thursday at 3 instead.
Harold: Lunch moved to Saturday the 28th (28 November 2026) because Emeka can't do Sunday.
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer", "withdrawn"),
    [
        ("When is Sarah coming to see me?", "25 November 2026", True),  # "can't come on Wednesday (25 November)"
        ("When is Sarah coming to see me?", "Thursday at 3", False),
        ("When do the swimming lessons start again?", "30 November", False),  # "until the 30th"
        ("When is lunch?", "Saturday 28 November", False),  # named before "can't"
        ("Who rang?", "Sarah, about the 25th", False),  # not asked when it is
    ],
)
def test_a_day_named_only_as_when_it_is_not_is_withdrawn(question: str, answer: str, withdrawn: bool) -> None:
    expected = UNKNOWN_ANSWER if withdrawn else None
    assert checked_denied_days(question, answer, answer_prompt(NOTES, question)) == expected
