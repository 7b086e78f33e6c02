"""An event's day answered with its note's filing day is answered again without the filing days
(kiosk.llm.filing_days), with test doubles and prompts built as the kiosk builds them."""

from __future__ import annotations

from datetime import datetime

import pytest
from doubles import ScriptedLLM

from kiosk.llm.answer_form import asks_when_it_is
from kiosk.llm.answer_steps import shown_reply
from kiosk.llm.filing_days import copies_a_filing_day, days_named, misleading_lines
from kiosk.llm.note_lines import asked_again_without
from kiosk.llm.profiles import DEFAULT_PROFILE, profile_without
from kiosk.llm.prompts import compact_answer_messages, notes_text

QUESTION = "When's my orthodontist appointment?"
NOTES = [
    (
        datetime(2026, 10, 6, 16, 0),
        "Remember I've got the orthodontist on Tuesday 13 October at 3:45.",
        "Kenji said this",
    ),
    (datetime(2026, 10, 10, 9, 0), "Soccer practice moved to Tuesdays and Thursdays at 5.", "Kenji said this"),
]


@pytest.mark.parametrize(
    ("question", "about_now"),
    [
        ("When's my orthodontist appointment?", True),
        ("When is the hearing clinic?", True),
        ("By when do I have to send Dev the energy money?", True),
        ("What day is Mama's birthday lunch?", True),
        ("What's the date of the museum trip?", True),
        ("When did Priya adopt the puppy?", False),
        ("What was the date of the school trip?", False),
        ("When was the last time I saw the dentist?", False),
        ("Where is the spare key?", False),
    ],
)
def test_questions_about_when_something_is_are_told_from_when_it_was(question: str, about_now: bool) -> None:
    assert asks_when_it_is(question) is about_now


def test_days_of_the_month_are_read_in_the_ways_people_write_them() -> None:
    assert days_named("13 October 2026, the 3rd of May, October 16th") == {(13, "october"), (3, "may"), (16, "october")}
    assert days_named("at 3:45 on Tuesday") == frozenset()


def test_the_filing_day_given_for_an_event_is_a_copy_of_the_day_header() -> None:
    notes = notes_text(compact_answer_messages(QUESTION, NOTES, "Kenji"))
    assert "[6 October 2026]" in notes
    assert copies_a_filing_day(QUESTION, "6 October 2026", notes)
    assert not copies_a_filing_day(QUESTION, "Tuesday 13 October 2026", notes)
    assert not copies_a_filing_day(QUESTION, "I don't know", notes)
    assert not copies_a_filing_day("When did I book the orthodontist?", "6 October 2026", notes)


def test_a_day_a_note_names_in_its_own_words_is_no_copy_of_its_header() -> None:
    today = [(datetime(2026, 10, 6, 8, 0), "The plumber comes on 6 October at 10.", "Kenji")]
    notes = notes_text(compact_answer_messages("When is the plumber coming?", today, "Kenji"))
    assert not copies_a_filing_day("When is the plumber coming?", "6 October 2026", notes)


def test_a_day_only_a_line_about_something_else_names_is_still_a_copy() -> None:
    birthdays = [
        (datetime(2026, 10, 12, 9, 0), "My mum's birthday is on the 24th, remind me to order flowers.", "Priya"),
        (datetime(2026, 10, 14, 9, 0), "Fire drill this Wednesday 14 October at 11.", "Priya"),
        (datetime(2026, 10, 14, 9, 5), "Team lunch for Victor's birthday is on the 23rd at 12:30.", "Priya"),
    ]
    question = "When is my mum's birthday?"
    notes = notes_text(compact_answer_messages(question, birthdays, "Priya"))
    assert "[14 October 2026]" in notes
    assert copies_a_filing_day(question, "14 October 2026", notes)  # only the fire drill names the 14th
    assert not copies_a_filing_day("When is the fire drill?", "14 October 2026", notes)


def test_the_model_is_asked_again_without_the_day_headers() -> None:
    messages = compact_answer_messages(QUESTION, NOTES, "Kenji")
    assert misleading_lines(QUESTION, "13 October", notes_text(messages)) is None
    left_out = misleading_lines(QUESTION, "6 October 2026", notes_text(messages))
    assert left_out is not None
    llm = ScriptedLLM(default="Tuesday 13 October at 3:45")
    again = asked_again_without(llm, messages, QUESTION, left_out, max_tokens=32, temperature=0.0, concise=True)
    assert again == "Tuesday 13 October at 3:45"
    second = llm.calls[0].messages[1]["content"]
    assert "[6 October 2026]" not in second and "[10 October 2026]" not in second
    assert "orthodontist on Tuesday 13 October at 3:45" in second and "Soccer practice" in second


def test_the_default_profile_asks_again_when_a_filing_day_is_the_answer() -> None:
    messages = compact_answer_messages(QUESTION, NOTES, "Kenji")
    llm = ScriptedLLM(default="Tuesday 13 October at 3:45")
    shown = shown_reply(
        llm,
        messages,
        QUESTION,
        "6 October 2026",
        notes_given=True,
        profile=DEFAULT_PROFILE,
        max_tokens=32,
        temperature=0.0,
    )
    assert (shown.first, shown.text) == ("6 October 2026", "Tuesday 13 October at 3:45")
    off = profile_without("small-model", ("reask-filing-days",))
    kept = shown_reply(
        llm, messages, QUESTION, "6 October 2026", notes_given=True, profile=off, max_tokens=32, temperature=0.0
    )
    assert kept.text == "6 October 2026" and len(llm.calls) == 1
