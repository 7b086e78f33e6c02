from __future__ import annotations

from datetime import datetime

import pytest

from kiosk.llm.prompts import compact_answer_messages, notes_text
from kiosk.llm.weekdays_named import notes_weekdays

ROTA = (
    "Lunch cover: I'll do the desk Mondays and Wednesdays from one to two, Ciaran does Tuesdays and Thursdays, "
    "and we take turns on Fridays."
)
VISITS = "Note for you both: I come Monday, Wednesday and Friday, nine to twelve. On Tuesdays and Thursdays it's Priya."


def notes(asker: str, *said: tuple[str, str]) -> str:
    lines = [
        (datetime(2026, 10, 10 + day, 9), text, f"{speaker} said this on {10 + day} October 2026, 9:00 am.")
        for day, (speaker, text) in enumerate(said)
    ]
    return notes_text(compact_answer_messages("Which days?", lines, asker))


def test_the_askers_days_of_a_rota_someone_else_wrote() -> None:
    asked = "Which days do I cover the desk at lunchtime?"
    assert notes_weekdays(asked, "Lunch cover: Aoife will do the desk", notes("Ciaran", ("Aoife", ROTA))) == (
        "Tuesday, Thursday"
    )
    assert notes_weekdays(asked, "Fridays", notes("Aoife", ("Aoife", ROTA))) == "Monday, Wednesday"
    assert notes_weekdays(asked, "Mondays and Wednesdays", notes("Aoife", ("Aoife", ROTA))) is None


def test_the_days_of_the_person_the_question_names_or_of_the_speaker_saying_i() -> None:
    said = notes("Walter", ("Grace", VISITS))
    assert notes_weekdays("Which days does Priya come instead of Grace?", "Grace", said) == "Tuesday, Thursday"
    assert notes_weekdays("Which days does Grace come?", "Grace", said) == "Monday, Wednesday, Friday"


def test_the_days_of_the_clause_about_the_thing_asked() -> None:
    bins = "Bins: recycling goes out on Tuesday night, general waste on Thursday and Sunday nights."
    asked = "Which nights does the general waste go out?"
    assert notes_weekdays(asked, "Sunday and Thursday and Sunday nights.", notes("Javier", ("Javier", bins))) == (
        "Thursday, Sunday"
    )


def test_the_last_note_about_it_gives_the_days_and_an_answer_naming_them_stays() -> None:
    said = notes(
        "Kenji",
        ("Kenji", "Soccer practice is on Mondays."),
        ("Kenji", "Soccer practice moved to Tuesdays and Thursdays at 5."),
        ("Hiroshi", "Hiroshi will pick Kenji up from soccer on Thursdays."),
    )
    assert notes_weekdays("Which days is soccer practice now?", "Thursday", said) == "Tuesday, Thursday"
    assert notes_weekdays("Which days is soccer practice now?", "Tuesdays and Thursdays", said) is None


@pytest.mark.parametrize(
    "later",
    [
        "No soccer practice this Thursday, the pitch is flooded.",
        "Soccer practice is on Thursday (15 October 2026) only this week.",
        "Actually soccer moved again, the coach will text the new days.",
    ],
)
def test_nothing_is_said_after_a_one_off_a_negation_or_a_change(later: str) -> None:
    said = notes("Kenji", ("Kenji", "Soccer practice moved to Tuesdays and Thursdays at 5."), ("Kenji", later))
    assert notes_weekdays("Which days is soccer practice now?", "Thursday", said) is None


def test_only_questions_asking_which_days_are_answered() -> None:
    said = notes("Sami", ("Karim", "Sami has judo on Wednesdays at half past four."))
    assert notes_weekdays("What day is Sami's judo now?", "I don't know", said) == "Wednesday"
    assert notes_weekdays("When is Sami's judo?", "I don't know", said) is None
    assert notes_weekdays("Which days does Sami have judo?", "I don't know", said) == "Wednesday"


def test_what_day_it_moved_to_in_the_persons_own_note() -> None:
    cricket = (
        "Kabir",
        "Cricket training moved from Wednesday to Thursday at 5 for the rest of term. Dad drops me off and Mum picks"
        " me up.",
    )
    said = notes("Priya", ("Priya", "I can take her on the tram, I've got a free first period that Tuesday."), cricket)
    asked = "What day is Kabir's cricket training now?"
    assert notes_weekdays(asked, "Tuesday", said) == "Thursday"
    assert notes_weekdays(asked, "Wednesday", said) == "Thursday"
    assert notes_weekdays(asked, "Thursday at 5", said) is None


def test_another_persons_days_in_the_speakers_note_are_not_the_speakers() -> None:
    said = notes("Priya", ("Kabir", "Cricket training for Sami moved from Wednesday to Thursday."))
    assert notes_weekdays("What day is Kabir's cricket training now?", "Tuesday", said) is None


def test_a_move_away_from_a_day_alone_names_no_day() -> None:
    said = notes("Priya", ("Kabir", "Cricket training moved from Wednesday, the coach will tell us the new day."))
    assert notes_weekdays("What day is Kabir's cricket training now?", "Tuesday", said) is None


def test_a_day_something_happened_is_a_date_not_a_weekday_of_the_notes() -> None:
    said = notes("Tim", ("Tim", "I got into the study abroad program, I start on Mondays and Thursdays."))
    assert notes_weekdays("What day did Tim get into his study abroad program?", "5 January 2024", said) is None
    assert notes_weekdays("Which days does Tim have the study abroad program?", "Monday", said) == "Monday, Thursday"
