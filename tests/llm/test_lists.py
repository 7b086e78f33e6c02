"""A one-thing answer to a question asking for several, completed from the notes (kiosk.llm.lists)."""

from __future__ import annotations

from datetime import datetime

import pytest
from doubles import ListContinuingLLM, ScriptedLLM

from kiosk.llm.lists import asks_for_several, completed_list, names_one_thing
from kiosk.llm.prompts import COMPACT_EXAMPLES, compact_answer_messages

QUESTION = "What instruments does Melanie play?"
NOTES = [
    (datetime(2023, 5, 8), "I play clarinet in the evenings, it relaxes me.", "Melanie said this on 8 May 2023."),
    (
        datetime(2023, 7, 12),
        "Violin is my second instrument now, I play it daily!",
        "Melanie said this on 12 July 2023.",
    ),
    (datetime(2023, 7, 14), "Bought a cello case for my cousin today.", "Melanie said this on 14 July 2023."),
    (datetime(2023, 7, 12), "Cool! Tell me about it.", "Caroline said this on 12 July 2023."),
]
MESSAGES = compact_answer_messages(QUESTION, NOTES, "Melanie")


@pytest.mark.parametrize(
    ("question", "several"),
    [
        ("What instruments does Melanie play?", True),
        ("Which cities has Jon visited?", True),
        ("What kind of books does Caroline have in her library?", True),
        ("What events for veterans has John participated in?", True),
        ("What are Joanna's hobbies?", True),
        ("What are the names of Jolene's snakes?", True),
        ("What is Melanie's favourite instrument?", False),
        ("What did Melanie paint recently?", False),
        ("Where has Maria been?", False),
        ("What class does Evan take?", False),
        ("What business has Dave started?", False),
        ("When did Melanie go camping?", False),
    ],
)
def test_a_question_asking_for_several_things_is_told_from_one_asking_for_one(question: str, several: bool) -> None:
    assert asks_for_several(question) is several


@pytest.mark.parametrize(
    ("answer", "one"),
    [
        ("Clarinet", True),
        ("The homeless shelter", True),
        ("Clarinet, violin", False),
        ("Kyle and Sara", False),
        ("Yes, she does.", False),
        ("I don't know", False),
        ("She plays the clarinet in the evenings when she wants to relax after work", False),
    ],
)
def test_only_a_short_answer_naming_one_thing_is_completed(answer: str, one: bool) -> None:
    assert names_one_thing(answer) is one


def complete(llm: object, reply: str = "Clarinet", question: str = QUESTION) -> str | None:
    return completed_list(llm, MESSAGES, question, reply, reply, max_tokens=24, temperature=0.0, concise=True)


def test_the_reply_is_continued_after_a_comma_and_items_the_notes_hold_are_added() -> None:
    llm = ListContinuingLLM(more=" violin.")
    assert complete(llm, "Clarinet.") == "Clarinet, violin"
    assert llm.starts == ["Clarinet,"]
    assert llm.calls[-1].messages == MESSAGES  # the same prompt: the reply goes on, no second turn


@pytest.mark.parametrize(
    "more",
    [
        " flute",  # invented: no note says it
        " which is awesome",  # talk, not a thing
        " they're my main hobbies",
        " don't they",
        " Caroline",  # the other speaker
        " instruments",  # only the question's words
        " clarinet",  # already named
        " fencing, origami",  # the system prompt's worked example, not a note
        "",
    ],
)
def test_added_pieces_that_are_not_things_of_the_notes_are_left_out(more: str) -> None:
    assert "fencing, origami" in COMPACT_EXAMPLES
    assert complete(ListContinuingLLM(more=more)) is None


def test_an_item_only_another_note_names_is_not_added() -> None:
    # "cello" is in Melanie's notes, but no note says it is an instrument she plays (nor names it with clarinet)
    assert complete(ListContinuingLLM(more=" cello")) is None
    assert complete(ListContinuingLLM(more=" cello, violin")) == "Clarinet, violin"


PILLS = "What pills did the doctor give me?"
PILL_NOTES = [
    (
        datetime(2024, 3, 4),
        "The doctor gave me amoxicillin for the chest infection.",
        "Anna said this on 4 March 2024.",
    ),
    (datetime(2024, 3, 5), "I took ibuprofen for my headache.", "Anna said this on 5 March 2024."),
    (datetime(2024, 3, 6), "Dr Patel gave me amoxicillin and a nasal spray.", "Anna said this on 6 March 2024."),
]


def test_a_medicine_of_an_unrelated_note_is_never_added_to_the_doctors_pills() -> None:
    messages = compact_answer_messages(PILLS, PILL_NOTES, "Anna")

    def pills(more: str) -> str | None:
        llm = ListContinuingLLM(more=more)
        return completed_list(
            llm, messages, PILLS, "Amoxicillin", "Amoxicillin", max_tokens=24, temperature=0.0, concise=True
        )

    assert pills(" ibuprofen") is None
    assert pills(" nasal spray") == "Amoxicillin, nasal spray"  # named with the first item in one note


def test_only_the_first_sentence_of_the_continuation_is_read_and_each_item_is_short() -> None:
    llm = ListContinuingLLM(more=" violin and clarinet lessons in the evenings with all of my friends. And piano")
    assert complete(llm) == "Clarinet, violin"


def test_nothing_is_continued_for_one_asked_thing_a_list_already_given_or_a_backend_that_cannot() -> None:
    llm = ListContinuingLLM(more=" violin")
    assert complete(llm, question="What is Melanie's favourite instrument?") is None
    assert complete(llm, "Clarinet, violin") is None
    assert complete(llm, "I don't know") is None
    assert llm.starts == []
    assert complete(ScriptedLLM(default="never used")) is None
