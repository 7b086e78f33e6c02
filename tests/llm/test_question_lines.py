"""The note lines a choosing question is about, read once per answer (kiosk.llm.question_lines)."""

from __future__ import annotations

import pytest

from kiosk.llm.question_lines import NoteLines, any_line_about, kind_of, lines_naming, lines_of_its_own_thing
from tests.doubles import answer_prompt

NOTES = """Notes of Mum, oldest first:
<notes>
[3 October 2026]
Mum: The amoxicillin is three times a day, finish the course
[5 October 2026]
Mum: No food after 8 pm on Thursday, it's the scan on Friday
Mum: Food shopping is on Saturdays
</notes>"""


def lines(question: str) -> NoteLines:
    return NoteLines.of(answer_prompt(NOTES, question))


def test_note_lines_leave_out_the_day_headers_and_the_question() -> None:
    read = lines("Is the scan on Friday?")
    assert len(read.lines) == 3
    assert all(line.startswith("Mum: ") for line in read.lines)


def test_the_question_own_thing_is_its_rarest_subject_word() -> None:
    """ "food" is in two lines, "amoxicillin" in one: the amoxicillin's line is the one about the question."""
    question = "Is the amoxicillin taken with food?"
    assert lines_of_its_own_thing(question, lines(question)) == [
        "Mum: The amoxicillin is three times a day, finish the course"
    ]


def test_a_medicine_s_family_stands_for_the_medicine() -> None:
    question = "Can I have amoxicillin?"
    allergy = "Mum: I'm allergic to penicillin"
    read = NoteLines.of(answer_prompt(f"<notes>\n{allergy}\n</notes>", question))
    assert any_line_about(question, read)
    assert lines_of_its_own_thing(question, read) == [allergy]


def test_no_line_is_about_a_question_sharing_no_word_with_the_notes() -> None:
    question = "Is Claire going for a job interview?"
    assert not any_line_about(question, lines(question))
    assert lines_of_its_own_thing(question, lines(question)) == []


@pytest.mark.parametrize(
    ("word", "kind"), [("tuesday", "weekday"), ("october", "month"), ("12", "number"), ("units", None)]
)
def test_kind_of_a_word(word: str, kind: str | None) -> None:
    assert kind_of(word) == kind


def test_lines_naming_hold_a_word_of_the_subject_not_a_modal_verb() -> None:
    question = "Should the scan still be on Friday?"
    assert lines_naming(question, lines(question)) == ["Mum: No food after 8 pm on Thursday, it's the scan on Friday"]
