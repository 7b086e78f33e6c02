"""The words of an either/or question that name one of its options (kiosk.llm.option_phrase)."""

from __future__ import annotations

import pytest

from kiosk.llm.option_phrase import option_phrase


@pytest.mark.parametrize(
    ("question", "option", "phrase"),
    [
        ("Do I take the ramipril in the morning or in the evening?", "morn", "In the morning"),
        ("Do I take the ramipril in the morning or in the evening?", "even", "In the evening"),
        ("Do I take the prednisolone with breakfast or at night?", "breakfast", "With breakfast"),
        ("Is aqua aerobics on Wednesday or Thursday this week?", "thursday", "Thursday"),  # not "this week"
        ("Do I take the metoprolol with food or on an empty stomach?", "empti", "On an empty stomach"),
        ("Elastoplast or one of the silicone dressings?", "silicon", "One of the silicone dressings"),
        ("The amoxicillin, is that before food or after?", "after", "After food"),  # the other timing's object
        ("Do I take the amoxicillin before or after meals?", "befor", "Before meals"),
    ],
)
def test_an_option_is_answered_with_the_question_own_words(question: str, option: str, phrase: str) -> None:
    assert option_phrase(question, option) == phrase


@pytest.mark.parametrize(
    ("question", "option"),
    [
        ("What items has Audrey bought or made for her dogs?", "made"),  # asks what: no options to answer with
        ("Is the pool open on Cup Day?", "open"),  # no "or"
        ("Is aqua aerobics on Wednesday or Thursday?", "friday"),  # not an option of the question
    ],
)
def test_no_phrase_without_options_to_answer_with(question: str, option: str) -> None:
    assert option_phrase(question, option) is None
