"""Questions only someone's memory could answer: without notes their answer is "I don't know", never a guess.

When no note the asker may read is about the question, the model answers from general knowledge. The no-memory
prompt tells it to refuse questions about a person's life, and the 0.5B model mostly does, but not always: asked
"What did the doctor say about Jess's ear?" it answered "The doctor said Jess had a hearing loss."; asked "Why do
the carers keep checking on me in the night?", "Because they want to know if I'm still alive." A question that
speaks of the asker ("my", "me", "am I"), of a person the terminal knows by name, of family ("Mom and Dad"), of a
titled person ("Mr Finch", "Dr Okoye") or of a day counted from now ("tomorrow", "this week") is about someone's
life, so without notes no answer to it can be right and any is made up. General questions stay the model's:
"How do I convert Celsius to Fahrenheit?" and "Tell me the capital of Japan" are not about the asker.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from kiosk.llm.third_person import straight_apostrophes
from kiosk.local_time import WEEKDAYS

_ASKER = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|me|my|mine|myself)\b", re.IGNORECASE)
# "How do I ...", "Tell me ...", "Can you give me ...": how to do something or a fact, not the asker's own life
_HOW_TO = re.compile(r"^\s*how\s+(?:do|can|should|would|could|might)\s+i\b", re.IGNORECASE)
_TELL_ME = re.compile(
    r"^\s*(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:tell|give|show|explain\s+to)\s+me\b", re.IGNORECASE
)
_FAMILY = re.compile(
    r"\b(?:mom|mum|mam|mommy|mummy|mama|mamma|dad|daddy|papa|pappa|grandma|grandpa|granny|grandad|granddad|"
    r"nana|nan|abuelo|abuela|oma|opa)\b",
    re.IGNORECASE,
)
_TITLED = re.compile(r"\b(?i:mr|mrs|ms|miss|dr|doctor|nurse|aunt|auntie|uncle)\.?\s+[A-Z][a-z]")
_FROM_NOW = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|(?:this|next|last)\s+(?:"
    + "|".join(("morning", "afternoon", "evening", "night", "week", "weekend", "month", "year", *WEEKDAYS))
    + r"))\b",
    re.IGNORECASE,
)


def asks_about_someone(question: str, people: Collection[str] = ()) -> bool:
    """True when `question` is about the asker's or a particular person's life (see the module's docstring);
    `people` are the names of the people the terminal knows, matched as capitalised words after the first ("Will it
    rain?" names no Will)."""
    text = straight_apostrophes(question)
    if _FAMILY.search(text) or _TITLED.search(text) or _FROM_NOW.search(text):
        return True
    after_first = text.strip().partition(" ")[2]
    if any(re.search(rf"\b{re.escape(name.strip())}\b", after_first) for name in people if name.strip()):
        return True
    return speaks_of_the_asker(text)


def speaks_of_the_asker(question: str) -> bool:
    """True when `question` speaks of the asker ("me", "my", "am I"), not only asks how to do something ("How do
    I ...") or to be told a fact ("Tell me ...")."""
    text = straight_apostrophes(question)
    return _ASKER.search(_TELL_ME.sub(" ", _HOW_TO.sub(" ", text))) is not None
