"""An answer of another kind than the question asks for becomes "I don't know" (issue #36), whatever the notes say.

The 0.5B model answers with what its notes hold nearest to the question, often a thing of the wrong kind: a day for
"What time ...?" ("The 5th of October"), one reading for a range ("What's Mr Finch's target INR range?" -> "3.8"),
the question's own number for "How much ...?" ("How much is a 10-visit swim pass?" -> "10"), and a bare day for
why or what for ("Why is Jack going on leave?" -> "The 16th for two weeks"; "What's Precious's hospital appointment
for?" -> "Thursday the 19th"), and a measure in units of another ("What's Femi's target range for his blood
sugar?" -> "12 to 14 units", his insulin), and a name or a date for a PIN, code or number ("What's Mei's card PIN?"
-> "Grace"; "What's the phone number for Hugo's daycare?" -> "13 November 2026"). Such
an answer says nothing true of what was asked, and a family may
take it for the answer.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import asked_sentence, content_stems, says_unknown, word_set
from kiosk.llm.time_anchors import ANCHOR
from kiosk.local_time import DAY_OF_MONTH, MONTHS, WEEKDAYS

_ASKS_WHAT_TIME = re.compile(r"^\s*(?:at\s+)?what\s+time\b", re.IGNORECASE)
_TIME_OF_DAY = re.compile(
    r"\b(?:noon|midday|midnight|morning|afternoon|evening|night|tonight|lunch\w*|dinner\w*|tea\w*|breakfast|"
    r"half|quarter|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b",
    re.IGNORECASE,
)
_ORDINAL = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_ASKS_RANGE = re.compile(r"\brange\b", re.IGNORECASE)
_BOUND = re.compile(
    r"\bbetween\b|\bunder\b|\bbelow\b|\babove\b|\bover\b|\bless than\b|\bmore than\b|\bup to\b|\bat (?:most|least)\b|"
    r"\bmax\w*|\bmin\w*|[<>≤≥]",
    re.IGNORECASE,
)
_ASKS_HOW_MUCH = re.compile(r"\bhow\s+(?:much|many)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_ASKS_WHY = re.compile(r"^\s*why\b|^\s*what\b.*\bfor\s*\?*\s*$", re.IGNORECASE)
# The words of a day, a time or a span of time, and the small words around them: "the 16th for two weeks".
_TIME_WORDS = (
    word_set(
        "today tonight tomorrow yesterday next last this coming week weeks weekend month months day days year years "
        "fortnight morning afternoon evening night noon am pm st nd rd th on at in of for from until till to by "
        "the a an and one two three four five six seven eight nine ten eleven twelve half quarter o'clock"
    )
    | frozenset(WEEKDAYS)
    | frozenset(MONTHS)
)
# Of those, the ones that name a time themselves ("16th", "weeks"), not only stand around one ("the", "for").
_NAMING_A_TIME = _TIME_WORDS - word_set("the a an and of for to on at in by")


def as_number(token: str) -> str:
    """A number as the notes and answers are compared: "8.15" and "8:15" alike, "2,340" as "2340"."""
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", token):
        return token.replace(",", "")
    return token.replace(".", ":").rstrip(":,")


def _without_dates(answer: str) -> str:
    """`answer` without its days of the month, ordinals and years: the digits a date holds."""
    return _YEAR.sub(" ", _ORDINAL.sub(" ", DAY_OF_MONTH.sub(" ", answer)))


def gives_no_time(question: str, answer: str) -> bool:
    """True when `question` asks what time and `answer` gives only a day ("The 5th of October"), no time of day."""
    if says_unknown(answer) or not _ASKS_WHAT_TIME.match(question):
        return False
    without_days = _without_dates(answer)
    return not (_TIME_OF_DAY.search(without_days) or re.search(r"\d", without_days))


def gives_no_range(question: str, answer: str) -> bool:
    """True when `question` asks for a range ("What's Mr Finch's target INR range?") and `answer` gives one
    number without a bound or a second number ("3.8": a reading, not the range)."""
    if says_unknown(answer) or not _ASKS_RANGE.search(question):
        return False
    return len(re.findall(r"\d+(?:[.,]\d+)?", answer)) == 1 and not _BOUND.search(answer)


def echoes_the_number_asked(question: str, answer: str) -> bool:
    """True when `question` asks how much or how many and every number of `answer` is one the question gives
    ("How much is a 10-visit swim pass?" -> "10": the number of visits, not a price)."""
    if says_unknown(answer) or not _ASKS_HOW_MUCH.search(question):
        return False
    given = {as_number(number) for number in _NUMBER.findall(question)}
    numbers = {as_number(number) for number in _NUMBER.findall(answer)}
    return bool(numbers) and numbers <= given


def gives_only_a_time(question: str, answer: str) -> bool:
    """True when `question` asks why or what for and `answer` names only a day, a time or a span of time ("The
    16th (16 November 2026) for two weeks."), besides the question's own words."""
    if says_unknown(answer) or not _ASKS_WHY.search(asked_sentence(question)):
        return False
    words = [word.lower() for word in re.findall(r"[A-Za-z']+", ANCHOR.sub(" ", answer))]
    if not any(word in _NAMING_A_TIME for word in words):
        return False
    left = " ".join(word for word in words if word not in _TIME_WORDS)
    return not content_stems(left) - content_stems(question)


# A PIN, a door or alarm code, a phone or room number: digits ("a dress code", "his number one goal" are not).
_ASKS_FOR_DIGITS = re.compile(
    r"\bpins?\b|\b(?:door|alarm|gate|garage|safe|lock|lockbox|keypad|access|entry|security|room|locker|bankid)\s+"
    r"codes?\b|(?<!dress )\bcodes?\s+(?:for|to|of)\b|\b(?:phone|client|account|room|flat|house|bus|reference|booking|"
    r"membership|patient|ticket|locker|card)\s+number\b|\bnumber\s+(?:for|of)\b",
    re.IGNORECASE,
)
_ASKS_WHAT = re.compile(r"^\s*what(?:'s|’s|\s+is|\s+are|\s+was)?\b", re.IGNORECASE)


def gives_no_digits(question: str, answer: str) -> bool:
    """True when `question` asks what a PIN, code or number is and `answer` holds no digit but those of a date
    ("What's Mei's card PIN?" -> "Grace"; "What's the phone number for Hugo's daycare?" -> "13 November 2026")."""
    asked = asked_sentence(question)
    if says_unknown(answer) or not (_ASKS_WHAT.match(asked) and _ASKS_FOR_DIGITS.search(asked)):
        return False
    return not re.search(r"\d", _without_dates(answer))


# What a question asks to measure, by its words, and the units that measure it. "Pounds" weighs and pays, so it is
# no measure's own unit here.
_MEASURES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "temperature": (word_set("warm hot cold temperature"), word_set("degrees degree ° °c celsius fahrenheit")),
    "weight": (word_set("weigh weighs weight heavy heavier"), word_set("kg kgs kilo kilos kilograms stone lb lbs")),
    "blood sugar": (word_set("sugar sugars glucose"), word_set("mmol mmol/l")),
    "dose": (word_set("dose dosage units insulin"), word_set("units unit mg milligrams ml millilitres puffs")),
    "money": (
        word_set("cost costs price pay paid owe owes fee rent salary earn earning"),
        word_set("$ £ € dollars euros kronor cents pence"),
    ),
}
_MEASURE_WORD = re.compile(r"[$£€]|°c?|[a-z]+(?:/l)?", re.IGNORECASE)


def gives_another_measure(question: str, answer: str) -> bool:
    """True when `question` asks to measure one thing and `answer` gives only units of another ("What's Femi's
    target range for his blood sugar?" -> "12 to 14 units": the insulin dose, not a sugar level)."""
    if says_unknown(answer):
        return False
    asked = set(re.findall(r"[a-z]+", asked_sentence(question).lower()))
    kinds_asked = {kind for kind, (words, _) in _MEASURES.items() if words & asked}
    if not kinds_asked:
        return False
    given = {word.lower() for word in _MEASURE_WORD.findall(answer)}
    kinds_given = {kind for kind, (_, units) in _MEASURES.items() if units & given}
    return bool(kinds_given) and not kinds_given & kinds_asked


def of_another_kind(question: str, answer: str) -> bool:
    """True when `answer` is not the kind of answer `question` asks for (see the module's docstring)."""
    judged = (
        gives_no_time,
        gives_no_range,
        echoes_the_number_asked,
        gives_only_a_time,
        gives_another_measure,
        gives_no_digits,
    )
    return any(judge(question, answer) for judge in judged)
