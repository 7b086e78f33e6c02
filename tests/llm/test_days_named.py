"""A "when" answer is the day, with its weekday and time, that the notes say (kiosk.llm.days_named)."""

from __future__ import annotations

from datetime import date

import pytest

from kiosk.llm.days_named import day_named, notes_day
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt


def _notes(*dated_lines: tuple[str, str], asker: str = "Lucía") -> str:
    body = "\n".join(f"[{day}]\n{asker}: {text}" for day, text in dated_lines)
    return f"Notes of {asker}, oldest first:\n<notes>\n{body}\n</notes>"


PARENTS_EVENING = _notes(("14 October 2026", "Parents' evening at school is next Wednesday (21 October 2026) at 7."))


ASKED_ON = date(2026, 10, 15)


def _day(question: str, answer: str, notes: str, asked_on: date | None = ASKED_ON) -> str | None:
    return notes_day(question, answer, answer_prompt(notes, question), asked_on)


def test_the_day_a_note_gives_replaces_i_dont_know_or_another_day_with_its_weekday_and_time() -> None:
    question = "When is parents' evening?"
    assert _day(question, UNKNOWN_ANSWER, PARENTS_EVENING) == "Wednesday 21 October at 7"
    assert _day(question, "The evening before 3 October 2026 is at 7.", PARENTS_EVENING) == "Wednesday 21 October at 7"
    assert _day(question, "21 October 2026", PARENTS_EVENING) == "Wednesday 21 October at 7"  # completed
    assert _day(question, "Wednesday the 21st at 7", PARENTS_EVENING, date(2026, 10, 15)) is None  # already whole
    assert _day(question, "Wednesday at 7 pm", PARENTS_EVENING, date(2026, 10, 15)) is None  # its weekday: this week
    assert _day(question, UNKNOWN_ANSWER, PARENTS_EVENING, asked_on=None) is None  # a replay: "past" is unknown


def test_a_sentence_with_part_of_the_subject_counts_when_its_line_holds_the_rest() -> None:
    notes = _notes(
        ("4 November 2026", "Moira is coming to take Femi's bloods on Thursday the 12th (12 November 2026)."),
        ("5 November 2026", "Legs a bit better. Moira will be back next Wednesday (11 November 2026) to check them."),
    )
    question = "When is Moira coming back to check Dad's legs?"
    assert _day(question, "12 November 2026", notes, date(2026, 11, 6)) == "Wednesday 11 November"


def test_asked_what_time_the_answer_is_the_time_as_the_note_says_it() -> None:
    notes = _notes(("8 November 2026", "Lunch at Tante Mona's on Sunday the 15th (15 November 2026) at one."))
    question = "What time is lunch at Tante Mona's tomorrow?"
    assert _day(question, UNKNOWN_ANSWER, notes, asked_on=date(2026, 11, 14)) == "At one"
    assert _day(question, "at one", notes, asked_on=date(2026, 11, 14)) is None
    assert _day(question, UNKNOWN_ANSWER, notes, asked_on=date(2026, 11, 10)) is None  # tomorrow is another day


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (
            [
                ("2 November 2026", "Knee appointment on Wednesday the 11th (11 November 2026) at 9."),
                ("13 November 2026", "Knee appointment moved to Thursday the 26th (26 November 2026), still at 9."),
            ],
            "Thursday 26 November at 9",
        ),
        (
            [
                ("17 September 2026", "Dentist on Friday the 25th (25 September 2026) at 8:15, the new one."),
                ("24 September 2026", "Dentist rang, it's moved to Tuesday the 29th (29 September 2026), same time."),
            ],
            "Tuesday 29 September at 8:15",
        ),
    ],
)
def test_the_last_day_a_change_names_is_the_answer(lines: list[tuple[str, str]], said: str) -> None:
    question = "When's my knee appointment now?" if "Knee" in lines[0][1] else "When is my dentist now?"
    assert _day(question, UNKNOWN_ANSWER, _notes(*lines), asked_on=date(2026, 9, 1)) == said


@pytest.mark.parametrize(
    ("question", "lines"),
    [
        # two days without a change
        (
            "When is my dentist?",
            [
                ("1 October 2026", "Dentist on Friday (2 October 2026) at 9."),
                ("3 October 2026", "Dentist for Maja on Monday (5 October 2026) at 9."),
            ],
        ),
        # a later line says the plan changed, in other words
        (
            "When are we going to Uppsala for Farmor's birthday?",
            [
                ("20 September 2026", "Farmor's 80th birthday is on the 10th of October, we'll drive up to Uppsala."),
                ("2 October 2026", "Change of plan, we drive to Uppsala on Friday evening instead, the 9th."),
            ],
        ),
        # the sentence does not say what is asked: training, not the phone system going in
        (
            "When is the training for the new phone system?",
            [("22 September 2026", "The new phone system is going in on Saturday (26 September 2026).")],
        ),
        # one sentence naming two days
        (
            "When is Ciaran's sister's wedding?",
            [("8 October 2026", "Ciaran's sister's wedding moved to the 24th (24 October 2026) from the 16th.")],
        ),
        # a day already past
        ("When is my dentist?", [("1 October 2026", "Dentist on Friday (2 October 2026) at 9.")]),
    ],
)
def test_no_day_when_the_notes_do_not_say_one_for_the_thing_asked(question: str, lines: list[tuple[str, str]]) -> None:
    assert day_named(question, answer_prompt(_notes(*lines), question), date(2026, 10, 3)) is None


def test_only_a_question_asking_when_something_is_is_answered() -> None:
    assert _day("When did I go to parents' evening?", UNKNOWN_ANSWER, PARENTS_EVENING) is None
    assert _day("Who is going to parents' evening?", UNKNOWN_ANSWER, PARENTS_EVENING) is None


def test_picking_someone_up_from_somewhere_on_that_day_changes_nothing() -> None:
    notes = _notes(
        ("7 October 2026", "I've got my dentist on the 22nd (22 October 2026) at half nine in the morning."),
        ("14 October 2026", "Can somebody pick Tobi up from soccer on Thursday (22 October 2026)?"),
    )
    assert _day("When's my dentist?", UNKNOWN_ANSWER, notes) == "Thursday 22 October at half nine"
    moved = _notes(
        ("7 October 2026", "I've got my dentist on the 22nd (22 October 2026) at half nine in the morning."),
        ("14 October 2026", "Actually the dentist cancelled, they'll ring with a new day."),
    )
    assert _day("When's my dentist?", UNKNOWN_ANSWER, moved) is None


def test_being_is_no_word_of_the_thing_asked_about() -> None:
    notes = _notes(
        ("20 October 2026", "The clinic says I need a new hearing aid, they will fit it on the 3rd of November at 2."),
        ("2 November 2026", "The hearing aid fitting has moved to Thursday the 5th (5 November 2026), still at 2."),
    )
    assert _day("When's my hearing aid being fitted?", "Thursday the 5th", notes, date(2026, 11, 4)) == (
        "Thursday 5 November at 2"
    )


def test_a_deadline_asked_as_handing_in_is_the_day_the_note_says_it_is_due() -> None:
    notes = _notes(("29 September 2026", "Swedish essay is due next Monday (5 October 2026), the one about the book."))
    question = "When do I have to hand in the Swedish essay?"
    assert _day(question, UNKNOWN_ANSWER, notes, date(2026, 10, 1)) == "Monday 5 October"


def test_a_change_to_every_such_weekday_changes_no_one_day() -> None:
    due = ("7 October 2026", "Remember my library books are due on the 20th (20 October 2026).")
    weekly = ("10 October 2026", "Soccer practice moved to Tuesdays and Thursdays at 5.")
    once = ("10 October 2026", "The mobile library moved from Tuesday (20 October 2026) to Wednesday.")
    question = "When do my library books have to go back?"
    assert _day(question, UNKNOWN_ANSWER, _notes(due, weekly), date(2026, 10, 14)) == "Tuesday 20 October"
    assert _day(question, UNKNOWN_ANSWER, _notes(due, once), date(2026, 10, 14)) is None


def test_the_day_something_moved_away_from_is_not_its_day() -> None:
    notes = _notes(
        ("7 October 2026", "I've got my dentist on the 22nd (22 October 2026) at half nine in the morning."),
        ("14 October 2026", "The dentist moved me from Thursday (22 October 2026), they'll ring with a new day."),
    )
    assert _day("When's my dentist?", UNKNOWN_ANSWER, notes) is None
    starting = _notes(("8 October 2026", "Actually judo moved to Thursday the 15th (15 October 2026) from next week."))
    assert _day("When's judo?", UNKNOWN_ANSWER, starting) == "Thursday 15 October"


EYE_CLINIC = _notes(
    (
        "5 November 2026",
        "St John's moved Gogo's eye appointment to Thursday the 12th (12 November 2026) at 11, they cancelled "
        "Wednesday the 11th (11 November 2026). Sipho, can you take her?",
    ),
    asker="Thandi",
)


def test_of_a_sentence_naming_two_days_the_clause_about_the_thing_gives_its_day() -> None:
    question = "When is Gogo's eye appointment?"
    assert _day(question, "Wednesday", EYE_CLINIC, date(2026, 11, 9)) == "Thursday 12 November at 11"


def test_two_clauses_about_the_thing_naming_different_days_give_none() -> None:
    notes = _notes(
        (
            "5 November 2026",
            "Gogo's eye appointment was on Wednesday the 11th (11 November 2026), the eye appointment is now on "
            "Thursday the 12th (12 November 2026).",
        ),
        asker="Thandi",
    )
    assert day_named("When is Gogo's eye appointment?", answer_prompt(notes, "q"), date(2026, 11, 9)) is None


def test_a_clause_naming_another_day_with_a_word_of_the_question_leaves_the_sentence_unread() -> None:
    notes = _notes(
        (
            "14 October 2026",
            "Actually my sister's wedding moved to the 24th (24 October 2026), so I need Friday the 23rd (23 October "
            "2026) off instead of the 16th (16 October 2026).",
        ),
        asker="Ciaran",
    )
    question = "Which day is Ciaran off for his sister's wedding?"
    assert day_named(question, answer_prompt(notes, question), date(2026, 10, 15)) is None


def test_an_answer_saying_more_than_the_day_is_not_cut_to_the_day_without_a_time() -> None:
    notes = _notes(
        (
            "9 November 2026",
            "Change of date: the sausage sizzle moves to Sunday 15 November, same time, because the over-12s are "
            "away on the Saturday.",
        ),
        asker="Liz",
    )
    question = "When's the sausage sizzle?"
    assert _day(question, "Sunday 15 November, 11 till 2", notes, date(2026, 11, 10)) is None
    assert _day(question, "15 November 2026", notes, date(2026, 11, 10)) == "Sunday 15 November"


def test_today_or_tomorrow_beside_the_day_is_no_more_than_the_day() -> None:
    notes = _notes(("10 November 2026", "The podiatrist is coming on the 17th (17 November 2026) to do my feet."))
    question = "When is the podiatrist coming?"
    assert _day(question, "Tomorrow, Tuesday 17 November", notes, date(2026, 11, 16)) == "Tuesday 17 November"
