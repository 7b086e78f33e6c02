"""A medicine answered for a time of day the notes give it at another time only.

Told "Pai's tablets: bisoprolol 5 mg and furosemide 40 mg in the morning, ramipril 2.5 mg in the evening,
atorvastatin 20 mg at bedtime" and asked "Which tablet do I take in the evening?", the 0.5B model answered
"bisoprolol 5 mg and furosemide 40 mg in the evening": two morning tablets given for the evening, the harmful
answer about medicine.

For a question about medicine naming a time of day, a medicine of the answer is at another time when it stands in
note clauses (split at commas and full stops) that name a time of day, and none of them the asked time or one that
may be the same (the evening and the night, supper and bedtime); a medicine no clause gives a time is left alone.
Such an item is taken off a list answer ("Aspirin 75 mg, lisinopril" -> "Lisinopril", the aspirin being "with
dinner"); an answer left without a medicine is withdrawn ("I don't know").
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import says_unknown, word_set
from kiosk.llm.lists import ITEM_SEPARATOR
from kiosk.llm.medicine_names import asks_about_medicine, medicine_words
from kiosk.llm.note_lines import note_lines
from kiosk.llm.note_speakers import spoken_text
from kiosk.llm.prompts import UNKNOWN_ANSWER
from kiosk.llm.question_lines import CLAUSE_BREAK
from kiosk.stems import porter_stem

# The times of day, each with those it may be the same as: a medicine "in the evening" may be the one "at night".
# Not "tea": "Can I take the iron tablet with tea?" asks about a drink.
_SAME_TIME = {
    "morning": word_set("morning breakfast"),
    "breakfast": word_set("morning breakfast"),
    "lunch": word_set("lunch lunchtime midday afternoon"),
    "lunchtime": word_set("lunch lunchtime midday afternoon"),
    "midday": word_set("lunch lunchtime midday afternoon"),
    "afternoon": word_set("lunch lunchtime midday afternoon evening"),
    "evening": word_set("evening dinner supper night bedtime afternoon"),
    "dinner": word_set("evening dinner supper night bedtime"),
    "supper": word_set("evening dinner supper night bedtime"),
    "night": word_set("evening dinner supper night bedtime"),
    "bedtime": word_set("evening dinner supper night bedtime"),
}
_TIME = re.compile(rf"\b(?:{'|'.join(_SAME_TIME)})\b", re.IGNORECASE)


def checked_medicine_times(question: str, answer: str, notes: str) -> str | None:
    """`answer` without the medicines the notes give at another time of day only than the one the question asks,
    or "I don't know" when none is left (see the module's docstring); None keeps the answer."""
    asked = {word.lower() for word in _TIME.findall(question)}
    if not asked or says_unknown(answer) or not asks_about_medicine(question):
        return None
    same = frozenset().union(*(_SAME_TIME[word] for word in asked))
    clauses = [clause for line in note_lines(notes) for clause in CLAUSE_BREAK.split(spoken_text(line.text))]
    timed = [(_medicine_stems(clause), {word.lower() for word in _TIME.findall(clause)}) for clause in clauses]
    items = [item.strip(" .") for item in ITEM_SEPARATOR.split(answer) if item.strip(" .")]
    kept = [item for item in items if not any(_at_another_time(name, timed, same) for name in medicine_words(item))]
    if len(kept) == len(items):
        return None
    if not any(medicine_words(item) for item in kept):
        return UNKNOWN_ANSWER
    shortened = ", ".join(kept)
    return shortened[:1].upper() + shortened[1:]


def _medicine_stems(text: str) -> frozenset[str]:
    return frozenset(porter_stem(word) for word in medicine_words(text))


def _at_another_time(medicine: str, timed: list[tuple[frozenset[str], set[str]]], same: frozenset[str]) -> bool:
    """True when the note clauses naming `medicine` (`timed`: each clause's medicine stems and times of day) name
    times of day, none of them one of `same`."""
    stem = porter_stem(medicine)
    times = {time for medicines, named in timed if stem in medicines for time in named}
    return bool(times) and not times & same
