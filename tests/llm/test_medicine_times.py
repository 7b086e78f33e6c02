"""A medicine answered for a time of day the notes give it at another time only is taken off the answer
(kiosk.llm.medicine_times)."""

from __future__ import annotations

import pytest

from kiosk.llm.medicine_times import checked_medicine_times
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

NOTES = """Notes of Joaquim, oldest first:
<notes>
[19 October 2026]
Joaquim: Bisoprolol 5 mg and furosemide 40 mg in the morning, ramipril in the evening, atorvastatin at bedtime.
Joaquim: Keep taking the aspirin 75 mg with dinner like before.
Joaquim: The vitamin D tablet is once a week.
</notes>"""


def checked(question: str, answer: str) -> str | None:
    return checked_medicine_times(question, answer, answer_prompt(NOTES, question))


@pytest.mark.parametrize(
    ("question", "answer", "shown"),
    [
        (
            "Which tablet do I take in the evening?",
            "Bisoprolol 5 mg and furosemide 40 mg in the evening",
            UNKNOWN_ANSWER,
        ),
        ("Which tablets do I take in the morning?", "Aspirin 75 mg, bisoprolol", "Bisoprolol"),  # aspirin: dinner
        ("Which tablets do I take in the evening?", "Ramipril", None),
        ("What do I take at night?", "Atorvastatin and ramipril", None),  # the evening may be the night
        ("What do I take in the morning?", "Vitamin D and bisoprolol", None),  # no time given for vitamin D
        ("What do I take for my heart?", "Aspirin", None),  # no time of day asked
        ("Which tablets do I take in the evening?", "I don't know", None),
    ],
)
def test_a_medicine_at_another_time_is_taken_off(question: str, answer: str, shown: str | None) -> None:
    assert checked(question, answer) == shown
