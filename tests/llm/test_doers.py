"""A "who" answer is the one person the notes say does what is asked (kiosk.llm.doers)."""

from __future__ import annotations

from datetime import date

import pytest

from kiosk.llm.doers import YOU, doer_named, notes_doer
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt


def _notes(own: list[str], shared: list[str], asker: str = "Lucía") -> str:
    blocks = f"Notes of {asker}, oldest first:\n<notes>\n[8 September 2026]\n" + "\n".join(own) + "\n</notes>"
    if shared:
        blocks += (
            "\n\nNotes other people shared (data, not the asker's own), oldest first:\n<notes>\n[10 September 2026]\n"
            + "\n".join(shared)
            + "\n</notes>"
        )
    return blocks


def _shared(author: str, text: str) -> str:
    return f"- (family group note by {author} — not the asker's) {author}: {text}"


VOLLEYBALL = _notes(
    ["Lucía: Who's picking me up from volleyball on Wednesdays now?"],
    [_shared("Carmen", "Lucía, Carmen will pick you up from volleyball on Wednesdays at 8.")],
)


def _doer(question: str, notes: str, asked_on: date | None = None) -> str | None:
    return doer_named(question, answer_prompt(notes, question), asked_on)


def test_the_one_a_note_says_will_do_it_answers_not_the_person_it_is_told_to() -> None:
    assert _doer("Who's picking me up from volleyball?", VOLLEYBALL) == "Carmen"
    question = "Who's picking me up from volleyball?"
    assert notes_doer(question, "Lucía", answer_prompt(VOLLEYBALL, question)) == "Carmen"
    assert notes_doer(question, UNKNOWN_ANSWER, answer_prompt(VOLLEYBALL, question)) == "Carmen"
    assert notes_doer(question, "Carmen picks you up", answer_prompt(VOLLEYBALL, question)) is None  # already named


@pytest.mark.parametrize(
    ("text", "doer"),
    [
        ("Mia is covering Jack's Saturday shift on the 7th, 6 till 2", "Mia"),
        ("I'll cover Jack's Saturday shift.", "Carmen"),  # the speaker
        ("Roster change: Mia's covering Jack's Saturday shift", "Mia"),
        ("I can't make parents' evening, Mia will cover the shift on Saturday.", "Mia"),
    ],
)
def test_a_name_or_the_speakers_i_just_before_the_verb_does_it(text: str, doer: str) -> None:
    assert _doer("Who's covering the Saturday shift?", _notes([], [_shared("Carmen", text)])) == doer


@pytest.mark.parametrize(
    "text",
    [
        "Tunde, can you pick up Grandad's prescription from Boots on Friday?",  # a question names no one
        "Somebody needs to pick up Grandad's prescription on Friday.",  # no name
        "Precious said she might get Grandad's prescription if she has time.",  # only maybe
        "Bisi picked up the milk from Boots.",  # another thing
    ],
)
def test_a_request_or_a_sentence_without_a_doer_names_no_one(text: str) -> None:
    notes = _notes([], [_shared("Bisi", text)], asker="Tunde")
    assert _doer("Who's picking up Grandad's prescription from Boots on Friday?", notes) is None


def test_someone_said_to_be_doing_it_does_it_and_a_family_word_names_them() -> None:
    said = "Mum, I can't do Friday. Precious said she'll get Grandad's prescription instead."
    notes = _notes([], [_shared("Tunde", said)], asker="Bisi")
    assert _doer("Who's picking up Grandad's prescription from Boots on Friday?", notes) == "Precious"
    notes = _notes(
        [], [_shared("Luca", "Marco, I'm working Saturday. Mum will take you driving on Sunday.")], asker="Marco"
    )
    assert _doer("Who's taking me driving on the weekend?", notes) == "Mum"


def test_two_people_named_for_it_name_no_one() -> None:
    notes = _notes(
        [],
        [
            _shared("Carmen", "Carmen will pick you up from volleyball on Wednesdays."),
            _shared("Javier", "Actually Javier will pick you up from volleyball this week."),
        ],
    )
    assert _doer("Who's picking me up from volleyball?", notes) is None


def test_a_later_line_saying_they_cannot_names_no_one() -> None:
    notes = _notes(
        [],
        [
            _shared("Bisi", "Tunde will pick up Grandad's prescription from Boots on Friday."),
            _shared("Tunde", "Mum, I can't do Friday, I've got a late class."),
        ],
        asker="Precious",
    )
    assert _doer("Who's picking up Grandad's prescription?", notes) is None


def test_a_sentence_about_another_day_names_no_one_for_the_day_asked() -> None:
    notes = _notes([], [_shared("Michiko", "Hiroshi will pick Kenji up from soccer on Thursdays.")], asker="Kenji")
    question = "Who's picking me up from soccer today?"
    assert _doer(question, notes, asked_on=date(2026, 10, 15)) == "Hiroshi"  # a Thursday
    assert _doer(question, notes, asked_on=date(2026, 10, 16)) is None  # a Friday
    assert _doer("Who's picking me up from soccer on Friday?", notes) is None
    dated = _notes([], [_shared("Erik", "Sofia will drive Maja to handball tomorrow (12 September 2026).")], "Maja")
    assert _doer("Who's driving me to handball this morning?", dated, asked_on=date(2026, 9, 12)) == "Sofia"
    assert _doer("Who's driving me to handball this morning?", dated, asked_on=date(2026, 9, 19)) is None


def test_the_asker_named_as_the_doer_is_you() -> None:
    notes = _notes(["Dan: I'll wheel Femi's bins out on my Monday visit."], [], asker="Dan")
    assert _doer("Who's wheeling Femi's bins out on Monday?", notes) == YOU
    question = "Who's wheeling Femi's bins out on Monday?"
    assert notes_doer(question, "You are", answer_prompt(notes, question)) is None


def test_only_a_question_asking_who_does_something_is_answered() -> None:
    assert _doer("Who did Carmen pick up from volleyball?", VOLLEYBALL) is None
    assert _doer("When is Carmen picking me up from volleyball?", VOLLEYBALL) is None
    assert _doer("Who's picking me up?", VOLLEYBALL) is None  # nothing but the verb: about anything


def test_whose_turn_it_is_is_said_by_the_past_weeks_notes() -> None:
    said = "Recycling is Tuesday nights now. Sami's turn to take the bins out this week."
    notes = answer_prompt(_notes([], [_shared("Karim", said)], asker="Nadia"), "Whose turn?")
    asked = "Whose turn is it to take the bins out this week?"
    assert doer_named(asked, notes, date(2026, 9, 10)) == "Sami"
    assert doer_named(asked, notes, date(2026, 9, 20)) is None  # turns go round: a note of last week says nothing
    assert doer_named(asked, notes, None) is None
    mine = answer_prompt(_notes([], [_shared("Sami", "My turn to take the bins out, I know.")], asker="Sami"), "?")
    assert doer_named(asked, mine, date(2026, 9, 10)) == "You"


def test_the_doer_of_the_clause_about_the_thing_not_of_the_clause_before() -> None:
    notes = """Notes of Hoa, oldest first:
<notes>
[22 November 2026]
Linh: Thanksgiving at our house on Thursday at 2. Ba is making the spring rolls and David is doing the turkey.
</notes>"""
    assert doer_named("Who is doing the turkey?", answer_prompt(notes, "Who is doing the turkey?")) == "David"
