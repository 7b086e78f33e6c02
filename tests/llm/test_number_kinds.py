"""A number the answer gives as another kind than the notes hold it: an amount from a time of day or a date, a time
of day from a dose (kiosk.llm.number_kinds)."""

from __future__ import annotations

import pytest

from kiosk.llm.number_kinds import checked_number_kinds
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

NOTES = """Notes of Nora, oldest first:
<notes>
[3 October 2026]
Nora: The hairdresser comes on Fridays at 11, and the window cleaner charges 20 pounds
Nora: Yaw's museum trip needs 8 pounds by Monday (12 October 2026)
Nora: Harold: enoxaparin 40 mg at 6 pm, paracetamol 1 g four times a day
Nora: Joan's physio comes at 1 on Tuesdays, and Joan has 2 puffs of her inhaler
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How much does the hairdresser charge?", "$11 per hour"),  # 11 is when she comes
        ("How much money does Yaw need for the museum trip?", "12 pounds"),  # 12 is a date
        ("What time does Harold have his enoxaparin?", "1 pm"),  # 1 is the paracetamol's dose
        ("What time does Joan have her inhaler?", "At 2"),  # 2 is the puffs
    ],
)
def test_a_number_held_only_as_another_kind_is_withdrawn(question: str, answer: str) -> None:
    assert checked_number_kinds(question, answer, answer_prompt(NOTES, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How much does the window cleaner charge?", "£20"),
        ("How much money does Yaw need for the museum trip?", "8 pounds"),
        ("What time does Harold have his enoxaparin?", "6 pm"),
        ("What time does Joan's physio come?", "1 pm"),  # "at 1": a time
        ("Is it 20 pounds or 11?", "11 pounds"),  # a choice: kiosk.llm.choices judges it
    ],
)
def test_a_number_held_as_its_kind_is_kept(question: str, answer: str) -> None:
    assert checked_number_kinds(question, answer, answer_prompt(NOTES, question)) is None
