"""Words as the answer checks compare them: tokens, a bare lower-case form, numbers in digits (issue #36; used by
kiosk.llm.unsupported and the checks built on it)."""

from __future__ import annotations

import re

from kiosk.llm.answer_kinds import as_number
from kiosk.local_time import MONTH_NAMES
from kiosk.local_time import WEEKDAYS as WEEKDAY_NAMES
from kiosk.stems import porter_stem

WEEKDAYS = frozenset(WEEKDAY_NAMES)
MONTHS = frozenset(MONTH_NAMES)
# The stems of words naming a day, as content_stems writes them: weekdays, months, "today", "tonight", "tomorrow".
DAY_NAME_STEMS = frozenset(porter_stem(word) for word in WEEKDAYS | MONTHS | {"today", "tonight", "tomorrow"})
# The same amount written in words or digits is the same amount: "two puffs" holds the 2 of "2 puffs".
NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"],
    )
} | {"twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100"}
WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:['’][A-Za-z]+)?|\d+(?:[.:,]\d+)*")


def word_tokens(text: str) -> list[str]:
    return WORD.findall(text)


def bare_token(token: str) -> str:
    """A word lower-cased without its possessive and a weekday's plural: "Wednesdays" -> "wednesday"."""
    word = re.sub(r"['’]s$", "", token.lower())
    if word.endswith("s") and word[:-1] in WEEKDAYS:
        return word[:-1]
    return word


def typed_words(text: str, names: frozenset[str]) -> frozenset[str]:
    """The words of `text` that name a number, weekday, month or one of `names`, as they are compared."""
    found: set[str] = set()
    for token in word_tokens(text):
        word = bare_token(token)
        if token[:1].isdigit():
            found.add(as_number(token))
        elif word in WEEKDAYS or word in MONTHS or word in names:
            found.add(word)
    return frozenset(found)


def held_words(text: str) -> frozenset[str]:
    """Every word of `text` as typed_words compares it, numbers written as words also as digits."""
    held: set[str] = set()
    for token in word_tokens(text):
        word = bare_token(token)
        held.add(as_number(token) if token[:1].isdigit() else word)
        if word in NUMBER_WORDS:
            held.add(NUMBER_WORDS[word])
    return frozenset(held)
