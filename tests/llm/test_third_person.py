"""Another person's note in the third person (kiosk.llm.third_person) and where the prompt uses it."""

from __future__ import annotations

from datetime import datetime

import pytest

from kiosk.llm.prompts import compact_answer_messages, notes_text, shared_label
from kiosk.llm.third_person import in_third_person

OCT_2 = datetime(2026, 10, 2, 18, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I'm in all day tomorrow, I'll take Aisha's parcel in.",
            "Dev is in all day tomorrow, Dev will take Aisha's parcel in.",
        ),
        (
            "I’ve no lectures on Monday, I’ll let the plumber in.",
            "Dev has no lectures on Monday, Dev will let the plumber in.",
        ),
        ("Call me if my bus is late, I'd rather know.", "Call Dev if Dev's bus is late, Dev would rather know."),
        (
            "I am bringing the cake myself. The blue one is mine.",
            "Dev is bringing the cake Dev. The blue one is Dev's.",
        ),
        ("My knee is better; I was at the physio.", "Dev's knee is better; Dev was at the physio."),
    ],
)
def test_first_person_words_become_the_authors_name(text: str, expected: str) -> None:
    assert in_third_person(text, "Dev") == expected


def test_words_that_only_contain_first_person_letters_are_kept() -> None:
    text = "The ICU nurse said Imogen meets them in Miami at mealtime."
    assert in_third_person(text, "Dev") == text


def test_without_an_author_the_text_is_kept() -> None:
    assert in_third_person("I'll take it in.", " ") == "I'll take it in."


def test_a_shared_note_names_its_author_where_the_note_said_i() -> None:
    own = [
        (OCT_2, "There's a parcel coming tomorrow for me, can someone grab it?", "Aisha said this on 2 October 2026.")
    ]
    shared = [
        (
            (OCT_2, "I'm in all day tomorrow, I'll take Aisha's parcel in.", "Dev said this on 2 October 2026."),
            shared_label("group:flat", "Dev"),
        )
    ]
    text = notes_text(compact_answer_messages("Who's taking my parcel in tomorrow?", own, "Aisha", shared))
    assert "Dev will take Aisha's parcel in." in text
    assert "I'll take" not in text
    assert "Aisha: There's a parcel coming tomorrow (3 October 2026) for me" in text  # the asker's own words stay


def test_a_shared_note_without_a_speaker_in_its_context_takes_the_labels_author() -> None:
    shared = [((OCT_2, "I'll let the plumber in.", ""), shared_label("public", "Callum"))]
    assert "Callum will let the plumber in." in notes_text(compact_answer_messages("Who?", [], "Jess", shared))


def test_a_shared_note_of_nobody_named_keeps_its_words() -> None:
    shared = [((OCT_2, "I'll let the plumber in.", ""), shared_label("public", None))]
    assert "I'll let the plumber in." in notes_text(compact_answer_messages("Who?", [], "Jess", shared))
