"""An answer of another kind than the question asks for is "I don't know" (kiosk.llm.answer_kinds)."""

from __future__ import annotations

import pytest

from kiosk.llm.answer_kinds import as_number, of_another_kind


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What time does the boiler man come?", "15 October 2026"),  # a day, no time of day
        ("What's Mr Finch's target INR range?", "3.8"),  # a reading
        ("How much is a 10-visit swim pass?", "10"),  # the question's own number
        ("Why is Jack going on leave?", "The 16th (16 November 2026) for two weeks."),
        ("What's Precious's hospital appointment for?", "Thursday the 19th (19 November 2026)"),
        ("What's Femi's target range for his blood sugar?", "12 to 14 units"),  # his insulin, not a sugar level
        ("How much does Femi weigh now?", "14 units"),
        ("How much did the dishwasher cost?", "450 kg"),
        ("What's Mei's card PIN?", "Grace"),  # a name for digits
        ("What's the phone number for Hugo's daycare?", "13 November 2026"),  # a date for digits
        ("What's the door code?", "Friday the 13th"),
        ("What's the code for the upstairs room?", "The blue door"),
    ],
)
def test_an_answer_of_another_kind_is_found(question: str, answer: str) -> None:
    assert of_another_kind(question, answer)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What time does the boiler man come?", "At two on Thursday"),
        ("What's Mr Finch's target INR range?", "2 to 3"),
        ("What's Mr Finch's target INR range?", "Between 2 and 3"),
        ("How much is a 10-visit swim pass?", "$45"),
        ("How many kids are in the squad?", "12"),
        ("Why is Jack going on leave?", "A hernia operation on the 16th"),
        ("Why is Aisha going home this weekend?", "Her mum's birthday"),
        ("What's the hospital appointment for?", "His knee, on the 19th"),
        ("When is Jack going on leave?", "The 16th"),  # asks when: a day is the answer
        ("Why is Jack going on leave?", "I don't know"),
        ("How many units of Lantus does Femi get now?", "14 units"),
        ("How much does Femi weigh now?", "78.4 kg"),
        ("How warm is the outdoor pool?", "24 degrees"),
        ("How much is my share of the rent?", "475 pounds"),  # pounds weigh and pay: never of another kind
        ("What's his sugar level this morning?", "6.2"),  # no unit: not judged
        ("What's the garage door code?", "8093"),
        ("What's the phone number for the daycare?", "514 555 0199"),
        ("What's the dress code for the party?", "Smart casual"),  # a dress code is no digits
        ("What is John's number one goal?", "Winning a championship"),
    ],
)
def test_an_answer_of_the_kind_asked_is_kept(question: str, answer: str) -> None:
    assert not of_another_kind(question, answer)


def test_numbers_compare_alike_however_written() -> None:
    assert as_number("8.15") == as_number("8:15") == "8:15"
    assert as_number("2,340") == "2340"
