"""Whether a text names a medicine: a dose ("5 mg", "five milligrams") or a medicine's own name.

A family says its medicines by name ("I'm starting ramipril", "the doctor put me on metformin") and asks about them
by kind ("Which tablets am I on now?"), so the question and the note share no word. These tests let the relevance
floor (kiosk.retrieval.own_medicines) read a note about ramipril as a note about the asker's tablets. A name is
known from the families' tables (kiosk.llm.families), a short list of other common medicines, or an ending that
generic names share ("-pril", "-olol", "-statin"); an ending counts only on words of at least seven letters, so
"April" or "alone" are no medicines. A medicine the tests do not know is simply not recognised.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import word_set
from kiosk.llm.families import MEDICINE_NAMES
from kiosk.stems import porter_stem

# What a family calls medicines by kind: "Which tablets am I on now?"
MEDICINE_KIND = re.compile(
    r"\b(?:medicines?|medications?|meds|tablets?|pills?|drugs?|prescriptions?|doses?)\b", re.IGNORECASE
)
_DOSE = re.compile(r"\b(?:mg|mcg|ml|milligrams?|micrograms?|millilitres?|milliliters?)\b", re.IGNORECASE)
_OTHER_NAMES = frozenset(
    porter_stem(name)
    for name in word_set(
        "penicillin paracetamol acetaminophen tylenol insulin lantus tresiba novorapid humalog levothyroxine thyroxine "
        "warfarin metformin gaviscon cetirizine loratadine salbutamol ventolin donepezil latanoprost nitrofurantoin "
        "trimethoprim prednisolone prednisone hydrocortisone furosemide frusemide digoxin allopurinol "
        "sertraline citalopram fluoxetine melatonin omeprazole lansoprazole"
    )
)
_GENERIC_ENDINGS = (
    "pril", "olol", "statin", "sartan", "dipine", "formin", "prazole", "xaban", "gatran", "parin", "farin",
    "cillin", "mycin", "cycline", "floxacin", "oxetine", "pezil", "semide", "thiazide", "triptan", "tidine",
    "lukast", "prost", "azepam", "zolam", "profen", "coxib", "fenac", "codone", "solone", "isone", "amol", "toin",
)  # fmt: skip
_MIN_LETTERS_FOR_AN_ENDING = 7
_WORD = re.compile(r"[a-z][a-z-]+")


def medicine_words(text: str) -> frozenset[str]:
    """The lower-case words of `text` that name a medicine: "Doctor put me on amoxicillin" -> {"amoxicillin"}."""
    return frozenset(word for word in _WORD.findall(text.lower()) if _is_a_medicine(word))


def word_stems(text: str) -> set[str]:
    """The stems of the words of `text` as medicine_words reads them, where a medicine or its family ("penicillin",
    "nsaids") may stand."""
    return {porter_stem(word) for word in _WORD.findall(text.lower())}


def names_a_medicine(text: str) -> bool:
    """True when `text` gives a dose or names a medicine."""
    return bool(_DOSE.search(text)) or bool(medicine_words(text))


def asks_about_medicine(question: str) -> bool:
    """True when `question` names a medicine, a dose or medicines by kind ("Do I still take the aspirin?", "Which
    tablets does Dad take in the morning now?")."""
    return bool(MEDICINE_KIND.search(question)) or names_a_medicine(question)


def _is_a_medicine(word: str) -> bool:
    stem = porter_stem(word)
    if stem in MEDICINE_NAMES or stem in _OTHER_NAMES:
        return True
    return len(word) >= _MIN_LETTERS_FOR_AN_ENDING and word.endswith(_GENERIC_ENDINGS)
