"""An answer held only in lines that say nothing of what is asked becomes "I don't know" (kiosk.llm.unsupported)."""

from __future__ import annotations

import pytest

from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.unsupported import supported_answer, unsupported_words
from tests.doubles import answer_prompt

FAMILY = """Notes of Priya, oldest first:
<notes>
[3 November 2026]
Priya: Dadi's INR was 3.6 this morning. Next check in two weeks, Tuesday the 17th (17 November 2026) at 9.
[10 November 2026]
Priya: Bought the sleeping bag and the torch for Kabir's camp at Kmart.
[19 November 2026]
Priya: The GP said my iron is low: ferrous sulfate, one tablet every second day, not with tea or coffee.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[4 November 2026]
- (family group note by Raj — not the asker's) Raj: Interviews for Kabir are on Tuesday the 17th at 4:15.
[9 November 2026]
- (family group note by Kabir — not the asker's) Kabir: Cricket training moved from Wednesday to Thursday at 5.
- (family group note by Kabir — not the asker's) Kabir: Dad drops Kabir off and Mum picks Kabir up.
[14 November 2026]
- (family group note by Kamala — not the asker's) Kamala: Kamala's sister Meena lands at 6:40 in the morning.
[22 November 2026]
- (family group note by Raj — not the asker's) Raj: Camp drop-off is Monday at 7:15 am. Raj will take Kabir.
</notes>"""


def test_a_person_in_the_next_note_of_another_day_does_not_answer_a_who_question() -> None:
    question = "Who is dropping Kabir at camp this morning?"
    assert unsupported_words(question, "Kamala", answer_prompt(FAMILY, question)) == frozenset({"kamala"})
    assert unsupported_words(question, "Raj", answer_prompt(FAMILY, question)) == frozenset()


CHAT = """Notes of Melanie, oldest first:
<notes>
[20 October 2026]
Melanie: Who is driving Gran to the lunch on Saturday?
Caroline: I am, I'll pick her up at noon
[21 October 2026]
Tom: My new bike came today
</notes>"""


def test_a_reply_the_same_day_by_someone_else_answers_a_who_question() -> None:
    question = "Who is driving Gran to the lunch?"
    assert unsupported_words(question, "Caroline", answer_prompt(CHAT, question)) == frozenset()
    assert unsupported_words(question, "Tom", answer_prompt(CHAT, question)) == frozenset({"tom"})


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How often do I take the iron tablets?", "twice a day"),  # no line says twice
        ("How often do I take the iron tablets?", "Once a day"),
    ],
)
def test_an_answer_no_line_about_the_thing_asked_holds_is_withdrawn(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(FAMILY, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How often do I take the iron tablets?", "Every second day"),
        ("When are Kabir's interviews?", "Tuesday the 17th at 4:15"),
        ("Where did I buy the torch?", "Kmart"),
    ],
)
def test_an_answer_a_line_about_the_thing_asked_holds_is_kept(question: str, answer: str) -> None:
    assert supported_answer(question, answer, answer_prompt(FAMILY, question)) is None


def test_a_who_answer_naming_only_the_person_the_question_names_is_withdrawn() -> None:
    question = "Who is taking Dadi to her INR check?"
    assert supported_answer(question, "Dadi", answer_prompt(FAMILY, question)) == UNKNOWN_ANSWER
    assert supported_answer(question, "Dadi.", answer_prompt(FAMILY, question)) == UNKNOWN_ANSWER
    assert supported_answer("Whose birthday did Kabir have?", "Kabir's sister", answer_prompt(FAMILY, question)) is None


WARD = """Notes of Tomasz, oldest first:
<notes>
[20 November 2026]
Tomasz: Bed 2 is empty, Dev went home at 2. A new admission is coming into bed 2 tonight, a fractured ankle from A&E.
Tomasz: Grace will collect the new patient's notes from A&E at 8.
</notes>"""


def test_a_who_answer_not_in_a_sentence_with_the_asked_verb_is_withdrawn() -> None:
    question = "Who is coming into bed 2 tonight?"
    assert unsupported_words(question, "Dev", answer_prompt(WARD, question)) == frozenset({"dev"})
    assert unsupported_words(question, "A fractured ankle from A&E", answer_prompt(WARD, question)) == frozenset()


def test_a_who_answer_beside_the_asked_verb_or_one_meaning_it_stays() -> None:
    question = "Who is picking up the new patient's notes?"  # "collect" says "pick up"
    assert unsupported_words(question, "Grace", answer_prompt(WARD, question)) == frozenset()


def test_notes_saying_it_without_the_asked_verb_leave_the_answer_to_the_other_checks() -> None:
    said = """Notes of Raj, oldest first:
<notes>
[22 November 2026]
Raj: Camp drop-off is Monday at 7:15 am. Raj will take Kabir.
</notes>"""
    question = "Who is dropping Kabir at camp on Monday?"
    assert unsupported_words(question, "Raj", answer_prompt(said, question)) == frozenset()


def test_the_one_who_says_they_will_do_it_stays_not_the_one_it_must_be_done_by() -> None:
    said = """Notes of Robert, oldest first:
<notes>
[2 November 2026]
Robert: Tell Susan the furnace man is coming Monday between 8 and 10. Somebody needs to let him in.
Susan: I'll come Monday at half seven and let the furnace man in.
</notes>"""
    question = "Who's letting the furnace man in on Monday?"
    assert unsupported_words(question, "Susan", answer_prompt(said, question)) == frozenset()
    assert unsupported_words(question, "Robert", answer_prompt(said, question)) == frozenset({"robert"})


def test_the_one_it_is_done_for_is_not_the_one_doing_it() -> None:
    said = """Notes of Grace, oldest first:
<notes>
[9 November 2026]
- (staff group note by Omar — not the asker's) Omar: Can someone cover reception on Thursday the 12th in the morning?
- (staff group note by Wei — not the asker's) Wei: Wei will cover Thursday morning for Omar.
</notes>"""
    question = "Who is covering reception on Thursday morning?"
    assert unsupported_words(question, "Omar", answer_prompt(said, question)) == frozenset({"omar"})
    assert unsupported_words(question, "Wei", answer_prompt(said, question)) == frozenset()


def test_the_weekday_of_a_date_the_notes_give_is_held_with_it() -> None:
    said = """Notes of Edith, oldest first:
<notes>
[10 November 2026]
Edith: The podiatrist is coming on the 17th (17 November 2026) to do my feet.
</notes>"""
    question = "When is the podiatrist coming?"
    assert unsupported_words(question, "Tuesday 17 November", answer_prompt(said, question)) == frozenset()
    assert unsupported_words(question, "Wednesday 17 November", answer_prompt(said, question)) == {"wednesday"}
