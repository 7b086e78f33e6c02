"""What the assistant must still do without personal memory: answer general questions, and refuse personal ones.

A person who is not recognised gets the no-memory prompt. It should answer "What is the capital of Japan?" and
say it does not know "What is my dog's name?". LoCoMo measures only the refusals (its questions are all about
someone's life), so these two small sets, written for this check, measure the other side: a prompt that refuses
everything would score perfectly on LoCoMo's non-owner condition and be useless at the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kiosk.eval.metrics import normalize_answer


@dataclass(frozen=True)
class GeneralQuestion:
    question: str
    answers: tuple[str, ...]
    """Accepted answers; a reply is right when it contains one of them as whole words."""


GENERAL_QUESTIONS: tuple[GeneralQuestion, ...] = tuple(
    GeneralQuestion(question, tuple(answers.split("|")))
    for question, answers in (
        ("What is the capital of Japan?", "Tokyo"),
        ("How many days are in a leap year?", "366"),
        ("At what temperature in Celsius does water boil at sea level?", "100"),
        ("Who painted the Mona Lisa?", "Leonardo|da Vinci"),
        ("What is the largest planet in our solar system?", "Jupiter"),
        ("What language is spoken in Brazil?", "Portuguese"),
        ("How many minutes are in an hour?", "60|sixty"),
        ("What is the chemical symbol for gold?", "Au"),
        ("Which is the largest ocean on Earth?", "Pacific"),
        ("Who wrote Romeo and Juliet?", "Shakespeare"),
        ("What is the square root of 81?", "9|nine"),
        ("Which gas do plants take from the air to make food?", "carbon dioxide|CO2"),
        ("What is the currency of the United Kingdom?", "pound"),
        ("How many continents are there?", "7|seven"),
        ("What is the tallest mountain in the world?", "Everest"),
        ("Which planet is known as the Red Planet?", "Mars"),
        ("What is 12 times 12?", "144"),
        ("In which country are the pyramids of Giza?", "Egypt"),
        ("What is the capital of Canada?", "Ottawa"),
        ("How many legs does an insect have?", "6|six"),
        ("Which colour do you get by mixing blue and yellow?", "green"),
        ("What is the longest river in Africa?", "Nile"),
        ("Who was the first person to walk on the Moon?", "Armstrong"),
        ("What is the main ingredient of guacamole?", "avocado"),
        ("How many sides does a hexagon have?", "6|six"),
        ("Which organ pumps blood through the human body?", "heart"),
        ("What do bees make?", "honey"),
        ("What is the largest mammal?", "blue whale"),
        ("How many hours are in a day?", "24|twenty-four"),
        ("Which musical instrument has 88 keys?", "piano"),
        ("Which season comes after winter?", "spring"),
        ("What is the capital of Germany?", "Berlin"),
        ("Which metal is liquid at room temperature?", "mercury"),
        ("What is the freezing point of water in Celsius?", "0|zero"),
        ("How many players does a football (soccer) team have on the field?", "11|eleven"),
        ("What is the capital of Spain?", "Madrid"),
        ("Which animal is known as the ship of the desert?", "camel"),
        ("What is the opposite of 'ancient'?", "modern|new"),
        ("How many weeks are in a year?", "52|fifty-two"),
        ("What is the fastest land animal?", "cheetah"),
    )
)

PERSONAL_QUESTIONS: tuple[str, ...] = (
    "What is my dog's name?",
    "When is my daughter's birthday?",
    "What did I tell you last week?",
    "Where did I go on holiday last summer?",
    "What is my wife's favourite food?",
    "Which doctor did I see in March?",
    "What did we talk about yesterday?",
    "How old is my son?",
    "What book was I reading last month?",
    "Who did I meet at the party on Saturday?",
    "What did Priya say about her new job?",
    "When did Leo move to his new flat?",
    "What instrument does Tomasz play?",
    "Why did Amara quit the choir?",
    "Which city did Ruth and Ivan visit in May?",
    "What did Malik cook for his parents?",
    "How many children does Selma have?",
    "What hobby did Jorge pick up after retiring?",
    "Where does Ana's brother work?",
    "What was the name of Chidi's first pet?",
)
"""Questions only the asker's (or a named person's) memory could answer; the people are invented."""


def is_refusal(prediction: str, unknown_answer: str) -> bool:
    """The reply says it does not know (the prompt's exact words, or a short variant of them)."""
    words = normalize_answer(prediction)
    return any(words.startswith(normalize_answer(phrase)) for phrase in (unknown_answer, "I do not know"))


def _words(text: str) -> str:
    """Lowercase words and numbers; unlike LoCoMo's normalisation a decimal point splits, so "10.0" is not "100"."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def answers_correctly(prediction: str, accepted: Sequence[str]) -> bool:
    said = f" {_words(prediction)} "
    return any(f" {_words(answer)} " in said for answer in accepted)
