"""A number the answer gives as another kind than the notes about the question hold it becomes "I don't know"
(issue #36, with kiosk.llm.unsupported).

The 0.5B model reads a number off a note line and gives it as what the question asks for: an amount of money from a
time of day or a date ("How much does the hairdresser charge?" -> "$11", from "the hairdresser comes on Fridays at
11"; "How much money does Yaw need for the museum trip?" -> "16 pounds", from "by Monday (16 November 2026)"), or a
time of day from a dose ("What time does Harold have his enoxaparin?" -> "1 pm", from "paracetamol 1 g"). The number
is in the notes, so kiosk.llm.unsupported keeps it; held there only as another kind of number, it answers nothing.
A yes/no or either/or answer chooses rather than names, and is left alone.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import asks_yes_or_no, offers_a_choice
from kiosk.llm.answer_kinds import as_number
from kiosk.llm.compared_words import held_words
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.unsupported import supporting_lines
from kiosk.local_time import MONTH_NAMES

_AMOUNT = re.compile(
    r"[$£€]\s?(\d+(?:[.,]\d+)*)|\b(\d+(?:[.,]\d+)*)\s?(?:dollars?|pounds?|euros?|kronor|kr|bucks|quid)\b",
    re.IGNORECASE,
)
# A number that is a time of day ("at 11", "11:30", "11 am", "7 o'clock") or a date ("the 16th", "16 November
# 2026", a line's own date for "by Monday").
_CLOCK_OR_DATE = re.compile(
    r"\bat\s+\d{1,2}\b|\b\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.|o'clock)|\b\d{1,2}[:.]\d{2}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)\b|\b\d{{1,2}}\s+(?:of\s+)?(?:{'|'.join(MONTH_NAMES)})\b|\b(?:19|20)\d{{2}}\b",
    re.IGNORECASE,
)
# The hour of a time of day an answer gives: "1 pm", "1:30", "at 1", "7 o'clock".
_HOUR = re.compile(
    r"\b(\d{1,2})(?:[:.]\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.|o'clock)|\b(\d{1,2})[:.]\d{2}\b|\bat\s+(\d{1,2})\b",
    re.IGNORECASE,
)
# A number with its unit: a dose, a count or an amount ("1 g", "40 mg", "2 puffs", "12 units", "£8").
_WITH_UNIT = re.compile(
    r"[$£€]\s?\d+(?:[.,]\d+)?|\b\d+(?:[.,]\d+)?\s?(?:mg|g|mcg|µg|ml|kg|units?|puffs?|tablets?|drops?|%|pounds?|"
    r"euros?|dollars?)\b",
    re.IGNORECASE,
)


def time_only_amounts(question: str, answer: str, notes: str) -> frozenset[str]:
    """The amounts of money `answer` names ("$11", "16 pounds") that the notes about the question hold only as a
    time of day ("the hairdresser comes on Fridays at 11") or a date ("8 pounds by Monday (16 November 2026)")."""
    amounts = {as_number(next(group for group in match.groups() if group)) for match in _AMOUNT.finditer(answer)}
    return _held_only_as(question, notes, amounts, _CLOCK_OR_DATE)


def dose_only_times(question: str, answer: str, notes: str) -> frozenset[str]:
    """The hours of the times of day `answer` gives ("1 pm") that the notes about the question hold only with a unit
    ("paracetamol 1 g")."""
    hours = {as_number(next(group for group in match.groups() if group)) for match in _HOUR.finditer(answer)}
    return _held_only_as(question, notes, hours, _WITH_UNIT)


def _held_only_as(question: str, notes: str, numbers: set[str], kind: re.Pattern[str]) -> frozenset[str]:
    """The `numbers` the lines supporting an answer to `question` hold, but only inside matches of `kind`."""
    if not numbers:
        return frozenset()
    about = " ".join(supporting_lines(question, notes, with_days=False))
    return frozenset(numbers & held_words(about)) - held_words(kind.sub(" ", about))


def checked_number_kinds(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for an answer giving a number as another kind than the notes about the question hold it (see
    the module's docstring); None keeps the answer."""
    if asks_yes_or_no(question) or offers_a_choice(question):
        return None
    if time_only_amounts(question, answer, notes) or dose_only_times(question, answer, notes):
        return UNKNOWN_ANSWER
    return None
