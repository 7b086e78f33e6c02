from __future__ import annotations

from datetime import datetime

import pytest

from kiosk.llm.medicine_lists import with_medicines_beside
from kiosk.llm.prompts import compact_answer_messages, notes_text


def notes(*said: str, asker: str = "Aoife") -> str:
    lines = [
        (datetime(2026, 10, 10 + day, 9), text, f"{asker} said this on {10 + day} October 2026, 9:00 am.")
        for day, text in enumerate(said)
    ]
    return notes_text(compact_answer_messages("Which tablets am I on?", lines, asker))


CHEST = (
    "The doctor gave me prednisolone for the chest, 40 milligrams every morning for five days with breakfast, "
    "and amoxicillin 500 three times a day for the infection."
)
DORIS = "My tablets are the bisoprolol in the morning and the furosemide water tablet at lunchtime."


def test_the_other_medicine_of_the_sentence_joins_the_answer() -> None:
    asked = "What did the doctor give me for my chest?"
    assert with_medicines_beside(asked, "prednisolone", notes(CHEST)) == "prednisolone, amoxicillin"


def test_the_form_word_after_the_medicine_comes_with_it() -> None:
    said = "Doctor Bello gave me amoxicillin and a salbutamol inhaler for the chest infection."
    assert (
        with_medicines_beside("What did Doctor Bello give me for my chest?", "Amoxicillin.", notes(said))
        == "Amoxicillin, salbutamol inhaler"
    )


def test_a_medicine_taken_at_another_time_of_day_is_not_added() -> None:
    assert with_medicines_beside("Which tablets do I take at lunchtime?", "furosemide", notes(DORIS)) is None
    assert (
        with_medicines_beside("Which tablets do I take every day?", "furosemide water tablet", notes(DORIS))
        == "furosemide water tablet, bisoprolol"
    )


def test_both_at_that_time_counts_for_each() -> None:
    said = "He started me on lisinopril 10 mg and ramipril 2.5 mg, both in the morning."
    assert (
        with_medicines_beside("Which tablets do I take in the morning?", "lisinopril", notes(said))
        == "lisinopril, ramipril"
    )


@pytest.mark.parametrize(
    "said",
    [
        "Doctor said warfarin 5 mg in the evening, and no aspirin with it.",
        "I'm on warfarin now, instead of the apixaban.",
        "Warfarin 5 mg in the evening for Mum and metformin 500 mg for Dad.",
        "Warfarin 5 mg in the evening, and Femi has metformin 500 mg.",
    ],
)
def test_a_medicine_not_taken_or_taken_by_someone_else_is_not_added(said: str) -> None:
    assert with_medicines_beside("What medicines am I taking?", "warfarin", notes(said, asker="Mum")) is None


def test_a_medicine_another_line_says_was_stopped_is_not_added() -> None:
    both = "Stan takes metformin and amlodipine."
    asked = "Which tablets does Stan take?"
    assert with_medicines_beside(asked, "metformin", notes(both)) == "metformin, amlodipine"
    stopped = "The doctor has taken him off the amlodipine."
    assert with_medicines_beside(asked, "metformin", notes(both, stopped)) is None


def test_nothing_is_added_where_the_question_asks_for_no_medicines_or_none_was_answered() -> None:
    assert with_medicines_beside("When do I take the prednisolone?", "prednisolone", notes(CHEST)) is None
    assert with_medicines_beside("What did the doctor give me for my chest?", "I don't know.", notes(CHEST)) is None
    assert with_medicines_beside("What did the doctor give me for my chest?", "a cough", notes(CHEST)) is None


def own(*said: str) -> str:
    return notes(*said, asker="Antonio")


def test_asked_what_they_take_the_askers_own_regular_medicines_join() -> None:
    said = own(
        "The doctor says I take warfarin 5 mg in the evening, and never aspirin with it.",
        "The heart doctor added bisoprolol 2.5 mg in the morning.",
    )
    assert with_medicines_beside("What medicines am I taking now?", "bisoprolol", said) == "bisoprolol, warfarin"
    assert with_medicines_beside("What medicines am I taking now?", "warfarin", said) == "warfarin, bisoprolol"


@pytest.mark.parametrize(
    "said",
    [
        "I took ibuprofen for my headache.",
        "Doctor put me on amoxicillin for the ear, three times a day for five days.",
        "Dad takes metformin 500 mg every day.",
    ],
)
def test_a_one_off_a_course_or_another_persons_medicine_does_not_join(said: str) -> None:
    notes_ = own("I'm starting ramipril, 2.5 milligrams once a day.", said)
    assert with_medicines_beside("Which tablets am I on?", "ramipril", notes_) is None


def test_own_medicines_join_only_when_asked_what_the_asker_takes_for_no_named_purpose() -> None:
    said = own("I take warfarin 5 mg every day.", "The doctor added amlodipine for my blood pressure.")
    assert with_medicines_beside("Which tablets does Dad take?", "amlodipine", said) is None
    assert with_medicines_beside("Which tablets do I take for my blood pressure?", "amlodipine", said) is None
    assert with_medicines_beside("Which tablets do I take?", "amlodipine", said) == "amlodipine, warfarin"
