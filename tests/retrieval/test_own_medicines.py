"""A retrieval under the relevance floor keeps the asker's own notes naming the medicines asked about
(kiosk.retrieval.own_medicines)."""

from __future__ import annotations

from datetime import UTC, datetime

from kiosk.memory import Note
from kiosk.retrieval.own_medicines import own_medicine_notes
from kiosk.retrieval.relevance import apply_floor
from kiosk.retrieval.results import Retrieval, ScoredNote

ERIK, FAMILY_GROUP, MAJA = 1, 5, 3
RAMIPRIL = "Doctor said my blood pressure is a bit high, I'm starting ramipril, 2.5 milligrams once a day."
ALARM = "New alarm code is 1593, the old one stopped working."
PENICILLIN = "Remember I'm allergic to penicillin, my face swells right up."
PAPA = "Papa's tablets while he's here: apixaban 2.5 mg morning and evening."


def _note(text: str, owner: int, author: int | None = None, scope: str = "personal") -> Note:
    return Note(None, owner, "palm", text, datetime(2026, 11, 1, tzinfo=UTC), scope=scope, author_id=author)


def test_my_tablets_are_read_from_my_own_note_naming_a_medicine() -> None:
    mine = [_note(RAMIPRIL, ERIK), _note(ALARM, FAMILY_GROUP, ERIK, "group:family")]
    assert own_medicine_notes("Which tablets am I on now?", mine, ERIK) == [0]
    assert own_medicine_notes("Which tablets am I on now?", mine, None) == []
    assert own_medicine_notes("What's the alarm code?", mine, ERIK) == []


def test_another_person_s_prescription_does_not_answer_my_tablets() -> None:
    theirs = [_note(PAPA, FAMILY_GROUP, MAJA, "group:family"), _note(ALARM, FAMILY_GROUP, ERIK, "group:family")]
    assert own_medicine_notes("What tablets am I on right now?", theirs, ERIK) == []
    assert own_medicine_notes("What tablets am I on right now?", theirs, MAJA) == [0]  # she said it


def test_a_medicine_the_question_names_is_found_by_its_family_in_my_note() -> None:
    mine = [_note(PENICILLIN, ERIK)]
    question = "The doctor wants to give me amoxicillin for my chest. Is that safe for me?"
    assert own_medicine_notes(question, mine, ERIK) == [0]
    assert own_medicine_notes("Can I take ibuprofen for my back?", mine, ERIK) == []


def test_the_floor_keeps_only_those_notes_and_empties_other_retrievals() -> None:
    notes = [ScoredNote(_note(ALARM, ERIK), 0.236, 0.236), ScoredNote(_note(RAMIPRIL, ERIK), 0.224, 0.224)]
    below = Retrieval("familiarity", notes)
    kept = apply_floor(below, 0.4125, "Which tablets am I on now?", ERIK)
    assert [item.note.content for item in kept.notes] == [RAMIPRIL] and not kept.below_relevance_floor
    emptied = apply_floor(below, 0.4125, "Which tablets does Maja take?", ERIK)
    assert emptied.notes == [] and emptied.below_relevance_floor


def test_a_medicine_for_something_else_than_asked_is_left_out() -> None:
    amlodipine = _note("Remember I take my amlodipine, five milligrams, every morning before breakfast.", ERIK)
    chest = _note("Doctor gave me amoxicillin for the chest infection, three times a day for a week.", ERIK)
    statin = _note("The doctor added atorvastatin for the cholesterol, 20 milligrams at night.", ERIK)
    mine = [amlodipine, chest, statin]
    assert own_medicine_notes("Which tablets do I take for my blood pressure and my sugar?", mine, ERIK) == [0]
    assert own_medicine_notes("What do I take for my cholesterol?", mine, ERIK) == []  # no kind word: not asked
    assert own_medicine_notes("Which tablets do I take for my cholesterol?", mine, ERIK) == [0, 2]
    assert own_medicine_notes("Which tablets am I on now?", mine, ERIK) == [0, 1, 2]
