from __future__ import annotations

import pytest

from bench.general_knowledge import GENERAL_QUESTIONS
from kiosk.llm.personal_questions import asks_about_someone

PEOPLE = ["Jess", "Kenji", "Daniel", "June", "Will"]


@pytest.mark.parametrize(
    "question",
    [
        "What did the doctor say about Jess's ear?",  # a person the terminal knows
        "How much money does Kenji owe Daniel?",
        "Why do the carers keep checking on me in the night?",  # the asker
        "What medicines did the doctor give me?",
        "Am I allowed to take ibuprofen for this headache?",
        "How do I take my new inhaler?",  # how-to, but about the asker's own inhaler
        "Tell me my locker code",
        "What do Mom and Dad need from the store?",  # family
        "When is Grandma's hearing test?",
        "Is Mrs Lin worried about money?",  # a titled person
        "When is Dr. Okoye back?",
        "Where should visitors leave their cars tomorrow?",  # a day counted from now
        "Do the bins go out tonight?",
        "Which nights is the gym open next week?",
    ],
)
def test_a_question_about_someones_life_is_recognised(question: str) -> None:
    assert asks_about_someone(question, PEOPLE)


@pytest.mark.parametrize(
    "question",
    [
        "How do I convert Celsius to Fahrenheit?",
        "How can I get to the station?",
        "Tell me the capital of Japan",
        "Can you give me a word that rhymes with orange?",
        "Why do we dream?",
        "What month comes after May?",  # "June" is known, "May" is not
        "Will it rain on the weekend?",  # a question's first word is no name
        "Is the spare key under the mat?",
        "Who is bringing the cake?",
    ],
)
def test_a_general_question_is_left_to_the_model(question: str) -> None:
    assert not asks_about_someone(question, PEOPLE)


def test_no_general_knowledge_question_of_the_benchmark_is_taken_for_a_personal_one() -> None:
    assert [q.question for q in GENERAL_QUESTIONS if asks_about_someone(q.question, PEOPLE)] == []


def test_a_known_name_counts_only_as_a_whole_capitalised_word() -> None:
    assert asks_about_someone("When is June's birthday?", PEOPLE)
    assert not asks_about_someone("Which flowers bloom in june?", PEOPLE)
    assert not asks_about_someone("What is a jester?", PEOPLE)
    assert not asks_about_someone("Who is Jess?", [" ", ""]) and asks_about_someone("Who is Jess?", ["Jess"])
