"""A day, number or name the notes about the question do not hold becomes "I don't know" (kiosk.llm.unsupported)."""

from __future__ import annotations

import pytest

from kiosk.llm.compared_words import held_words
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.unsupported import names_the_other_side, possessors, supported_answer, titled_names, unsupported_words
from tests.doubles import answer_prompt

NOTES = """Notes of Nora, oldest first:
<notes>
[3 October 2026]
Nora: The vet says Pepper gets half a tablet of meloxicam, 2.5 mg, with her dinner
Nora: The bins go out on Sunday night
[6 October 2026]
Nora: Swimming lessons for Tom are every Monday at 17:30
Nora: My library books are due on the 20th
Nora: Denise checks the visitor passes at the front desk
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[8 October 2026]
- (family group note by Ivan — not the asker's) Ivan: I'll let the boiler man in on Thursday (15 October 2026) at two
- (family group note by Ivan — not the asker's) Ivan: Gran's lunch is on Saturday at the Harbour Inn. Rosa is driving.
[10 October 2026]
- (family group note by Rosa — not the asker's) Rosa: Change of plan, we drive to Whitby on Friday (16 October 2026)
- (family group note by Rosa — not the asker's) Rosa: I'll do the Tuesday visitor tours while Nora is off
</notes>"""


def notes(question: str) -> str:
    return answer_prompt(NOTES, question)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who is letting the boiler man in?", "Rosa"),  # Rosa drives to Gran's lunch; Ivan lets him in
        ("What time does the boiler man come?", "17:30"),  # Tom's swimming time
        ("What time is Gran's lunch?", "12:30"),  # in no note at all
        ("When does the boiler man come?", "Sunday"),  # the bins' day
        ("How much meloxicam does Pepper get?", "5 mg"),  # a dose no note gives
        ("When is Rosa's swimming lesson?", "16 October 2026"),  # Rosa speaks, but not of swimming
        ("When are Tom's swimming lessons?", "6 October 2026"),  # the day the line was said, not the lessons'
        ("When do my library books have to go back?", "Sunday night"),  # the bins "go" out; the books are due
        ("Who is doing the Tuesday visitor tours while I'm off?", "Denise"),  # "visitor" alone: asked who, not enough
    ],
)
def test_a_day_number_or_name_from_another_note_or_none_is_withdrawn(question: str, answer: str) -> None:
    assert unsupported_words(question, answer, notes(question))
    assert supported_answer(question, answer, notes(question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who is letting the boiler man in?", "Ivan"),  # the author of the boiler note
        ("When does the boiler man come?", "Thursday 15 October 2026 at 2"),  # "two", written as a digit
        ("How much meloxicam does Pepper get?", "2.5 mg, half a tablet"),
        ("What time are Tom's swimming lessons?", "17.30"),  # the same time, written with a dot
        ("When did I write about the swimming lessons?", "6 October 2026"),  # the day the line is filed under
        ("When is the boiler man coming?", "15 October 2026"),  # the line's own date
        ("Where is Gran's lunch?", "the Harbour Inn"),  # the name is in the line about the lunch
        ("What does Pepper get with her dinner?", "half a tablet of meloxicam"),  # no day, number or name to check
        ("What time is Gran's lunch?", UNKNOWN_ANSWER),
        ("Is Gran's lunch on Saturday?", "Yes"),  # a choice: kiosk.llm.choices judges it
        ("When is the plumber coming?", "Thursday"),  # no line is about a plumber: any line's Thursday holds it
        ("When are we going to Whitby for Gran's birthday?", "16 October 2026"),  # a place the question names
        ("Who is doing the Tuesday visitor tours while I'm off?", "Rosa"),
        ("When are my library books due?", "the 20th"),
    ],
)
def test_an_answer_the_notes_hold_is_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, notes(question)) is None


def test_without_notes_nothing_is_judged() -> None:
    assert supported_answer("What time is Gran's lunch?", "12:30", "Question: What time is Gran's lunch?") is None


CONVERSATION = """Notes of Mel, oldest first:
<notes>
[9 June 2023]
Caroline: Wow, what an amazing family pic! How long have you been married?
Melanie: 5 years already! Time flies.
Melanie: And the kids start swimming on Tuesday.
[10 June 2023]
Caroline: I painted 3 pictures today.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[9 June 2023]
- (family group note by Ivan — not the asker's) Ivan: How long is the drive? 7 hours.
</notes>"""


def test_the_reply_to_a_line_about_the_question_holds_its_answer() -> None:
    prompt = answer_prompt(CONVERSATION, "How long have Mel and her husband been married?")
    assert unsupported_words("How long have Mel and her husband been married?", "5 years", prompt) == frozenset()
    # only the next line, by someone else, on the same day: not a later line, not another day's line
    assert unsupported_words("How long have Mel and her husband been married?", "3 pictures", prompt) == {"3"}


def test_a_line_by_the_same_speaker_or_another_author_s_note_is_no_reply() -> None:
    monologue = """Notes of Nora, oldest first:
<notes>
[3 October 2026]
Nora: How long is the dishwasher guarantee? I forgot.
Nora: The pharmacy parking costs 20 kronor.
</notes>"""
    question = "How long is the dishwasher guarantee?"
    assert unsupported_words(question, "20 kronor", answer_prompt(monologue, question)) == {"20"}
    labelled = """Notes other people shared (data, not the asker's own), oldest first:
<notes>
[9 June 2023]
- (family group note by Ivan — not the asker's) Ivan: When do we leave for Whitby?
- (family group note by Rosa — not the asker's) Rosa: At 7, and Rosa is driving.
</notes>"""
    question = "When do we leave for Whitby?"
    assert unsupported_words(question, "At 7", answer_prompt(labelled, question)) == {"7"}


SERVICES = """Notes of Nora, oldest first:
<notes>
[3 October 2026]
Nora: The hairdresser comes on Fridays at 11, and the window cleaner charges 20 pounds
Nora: The boiler man is coming on Thursday (15 October 2026) at two
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What time does the boiler man come?", "15 October 2026"),  # a day, and no time of day
        ("What time does the boiler man come?", "Thursday"),
    ],
)
def test_no_time_when_asked_what_time_is_withdrawn(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(SERVICES, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How much does the window cleaner charge?", "£20"),
        ("What time does the boiler man come?", "At two on Thursday"),
        ("What time does the boiler man come?", "2"),
        ("What time does the boiler man come?", "In the afternoon"),
        ("When does the boiler man come?", "Thursday"),
    ],
)
def test_an_amount_the_notes_give_and_a_time_of_day_are_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(SERVICES, question)) is None


CHAT = """Notes of Melanie, oldest first:
<notes>
[20 October 2023]
Melanie: We celebrated my daughter's birthday with a concert last night
Caroline: Wow, what concert was it?
Melanie: It was Matt Patterson, he is so talented!
Caroline: I went to a pride parade last Friday
[2 November 2023]
Tim: I'm off to Ireland for a semester abroad next month
John: Congrats! Where are you going to stay?
Tim: I'm gonna stay in Galway, it's great for its music
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who performed at the concert at Melanie's daughter's birthday?", "Matt Patterson"),
        ("Where will Tim be going for a semester abroad?", "Galway"),
    ],
)
def test_an_answer_in_a_reply_to_a_reply_about_the_question_is_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(CHAT, question)) is None


DOORS = """Notes of Priya, oldest first:
<notes>
[5 October 2026]
Priya: Staff only: the back door code is 4719
Priya: The server room alarm code is 5531
Priya: Flu clinics for the over-65s start Saturday the 3rd of October
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What's the code for the front door?", "4719"),  # the back door's code
        ("When do the flu clinics for the under-65s start?", "Saturday the 3rd of October"),  # the over-65s'
    ],
)
def test_an_answer_from_a_line_about_the_other_side_of_the_thing_asked_is_withdrawn(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(DOORS, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What's the code for the back door?", "4719"),
        ("When do the flu clinics for the over-65s start?", "Saturday the 3rd of October"),
        ("What is the door code for staff?", "4719"),  # no side asked: the back door's line is about it
    ],
)
def test_an_answer_from_a_line_about_the_side_asked_is_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(DOORS, question)) is None


def test_a_line_naming_both_sides_is_about_either() -> None:
    assert not names_the_other_side("What's the front door code?", "Front door 1234, back door 4719")
    assert names_the_other_side("Which tablets are for the left eye?", "Two drops in the right eye")
    assert not names_the_other_side("Is the lift on the left?", "The lift is broken")


WARD = """Notes of Mei, oldest first:
<notes>
[5 October 2026]
Mei: My credit card is in the locker, the PIN is 4408
Mei: Grace's locker code is 2291
Mei: Mr Finch's INR was 3.8 this morning, it should stay between 2 and 3
Mei: Doctor Okoye moved my review to Friday (9 October 2026)
Mei: Lunch for Mama's birthday on Sunday (11 October 2026)
Mei: My daughter's teacher is Mrs Lin
Ivan: My favourite pub is the Harbour Inn
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What's Ivan's locker code?", "4408"),  # the asker's own PIN, from a line about "my" things
        ("What's Mr Finch's target INR range?", "3.8"),  # a reading, not a range
        ("When is Mama's next appointment with Doctor Bello?", "11 October 2026"),  # no line names Doctor Bello
    ],
)
def test_an_answer_from_another_person_s_things_a_reading_or_another_doctor_is_withdrawn(
    question: str, answer: str
) -> None:
    assert supported_answer(question, answer, answer_prompt(WARD, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What's Grace's locker code?", "2291"),
        ("What's my locker PIN?", "4408"),
        ("What's Ivan's favourite pub?", "The Harbour Inn"),  # Ivan's own "my"
        ("What's Mr Finch's target INR range?", "2 to 3"),
        ("What's Mr Finch's target INR range?", "Between 2 and 3"),
        ("When is my review with Doctor Okoye?", "Friday"),
        ("What's Lily's teacher called?", "Mrs Lin"),  # "my daughter" may be Lily
    ],
)
def test_an_answer_from_the_person_s_own_line_a_range_or_the_doctor_named_is_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(WARD, question)) is None


def test_possessors_and_titled_names_leave_out_the_first_word_and_the_title() -> None:
    assert possessors("What's Grace's locker code?") == {"grace"}
    assert possessors("Who's picking me up?") == frozenset()
    assert titled_names("When is Mama's appointment with Doctor Bello or Mrs Lin?") == {"bello", "lin"}
    assert titled_names("Did the doctor call?") == frozenset()


POOL = """Notes of Jack, oldest first:
<notes>
[28 October 2026]
Jack: Bisi, I'll wheel the bins out on my Monday evening visit from now on
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[1 October 2026]
- (staff group note by Grace — not the asker's) Grace: Room codes: downstairs is 4817 and upstairs is 2590. Ssh.
- (office group note by Grace — not the asker's) Grace: The safe combination is 7731 now
[28 October 2026]
- (staff group note by Grace — not the asker's) Grace: Chemicals come Tuesday. Leanne will sign for it.
- (staff group note by Mia — not the asker's) Mia: The outdoor pool is 26 degrees, nice. Chlorine out there 2.6.
- (staff group note by Priya — not the asker's) Priya: Priya will bring the kickboards in
- (staff group note by Tom — not the asker's) Tom: Picking Lily up from swim at 3
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who's signing for the chemicals delivery?", "Grace"),  # she told who; Leanne signs
        ("Who's putting the bins out on Monday?", "Bisi"),  # Jack told her he does it
        ("What's the code for the safe?", "4817"),  # a door code: the line shares only "code"
        ("What's the code for the upstairs room?", "4817"),  # the downstairs clause of the line
        ("What was the last chlorine reading in the indoor pool?", "2.6"),  # "out there": the outdoor pool
    ],
)
def test_a_person_who_only_told_a_code_of_another_thing_or_the_other_side_s_clause_is_withdrawn(
    question: str, answer: str
) -> None:
    assert supported_answer(question, answer, answer_prompt(POOL, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who's signing for the chemicals delivery?", "Leanne"),
        ("Who's putting the bins out on Monday?", "Jack"),  # the speaker speaking of himself
        ("Who's bringing the kickboards in?", "Priya"),  # another author's "I", written in the third person
        ("Who's picking Lily up from swim?", "Tom"),  # a note starting with its verb: its speaker does it
        ("What's the code for the safe?", "7731"),
        ("What's the code for the upstairs room?", "2590"),
        ("What's the code for the downstairs room?", "4817"),
    ],
)
def test_the_person_said_to_do_it_and_the_code_of_the_thing_asked_are_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(POOL, question)) is None


def test_tens_written_in_words_are_held_as_digits() -> None:
    assert {"20", "twenty", "5", "five"} <= held_words("They're about twenty kilos, nothing over five")
    assert "30" in held_words("thirty minutes")


def test_a_person_a_who_answer_makes_up_is_withdrawn() -> None:
    notes = answer_prompt(NOTES, "Who is driving to Gran's lunch?")
    assert unsupported_words("Who is driving to Gran's lunch?", "Lucia", notes) == frozenset({"lucia"})
    assert unsupported_words("Who is driving to Gran's lunch?", "Rosa", notes) == frozenset()
    assert unsupported_words("Who is driving to Gran's lunch?", "The boiler man", notes) == frozenset()


def test_a_who_answer_named_only_in_lines_about_something_else_is_withdrawn() -> None:
    notes = """Notes of Halina, oldest first:
<notes>
[13 November 2026]
Halina: My hairdresser is every second Friday at ten.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[13 November 2026]
- (care group note by Jasmine — not the asker's) Jasmine: We're out of Stan's thickener. Ania, can you get more?
- (care group note by Deb — not the asker's) Deb: Marek is visiting Stan on Sunday afternoon.
</notes>"""
    question = "Who is coming to see Stan on Sunday?"
    assert unsupported_words(question, "Ania", answer_prompt(notes, question)) == frozenset({"ania"})
    assert unsupported_words(question, "Marek", answer_prompt(notes, question)) == frozenset()


ASDA = """Notes of Kofi, oldest first:
<notes>
[19 November 2026]
Ama: Nana's drops: one drop in the left eye, starting tomorrow (20 November 2026).
[22 November 2026]
Efua: If anyone is going to Asda, I need denture tablets and prune juice.
</notes>"""


def test_a_line_naming_only_the_family_member_asked_about_does_not_support_an_answer_about_a_place() -> None:
    question = "What does Nana need from Asda?"
    copied = "Nana's drops: one drop in the left eye, starting tomorrow (20 November 2026)."
    assert supported_answer(question, copied, answer_prompt(ASDA, question)) == UNKNOWN_ANSWER
    assert supported_answer(question, "Denture tablets and prune juice", answer_prompt(ASDA, question)) is None
    question = "What are Nana's drops for?"
    assert supported_answer(question, "The left eye, from 20 November", answer_prompt(ASDA, question)) is None
