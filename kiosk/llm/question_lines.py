"""The note lines a yes/no or either/or question is about, read once per answer (kiosk.llm.choices,
kiosk.llm.either_or, kiosk.llm.yes_no)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kiosk.llm.answer_form import (
    QUOTES_AND_PUNCTUATION,
    asked_sentence,
    content_stems,
    says_what_is_asked,
    subject_stems,
    word_set,
)
from kiosk.llm.compared_words import MONTHS, WEEKDAYS, held_words
from kiosk.llm.families import families_of
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.note_speakers import names_given
from kiosk.llm.time_anchors import ANCHOR
from kiosk.stems import porter_stem

KINDS = ("weekday", "month", "number")
# What the notes answer when they contradict a choice without making one themselves.
NO_CHOICE = ""
# A word of what is asked right after one of these is refused or stopped: "no aspirin", "allergic to latex".
DENYING = word_set("no not never avoid without hold stop stopped allergic")
REACH_BEFORE = 2  # words between the denying word and the word it denies: "hold tonight's warfarin"
# Words of a question that name no thing of it: "Can Biscuit have his breakfast?" is not about "they can", "Is
# hockey still on Tuesdays?" not about "the bill is still to pay".
_NOT_A_THING = frozenset(
    porter_stem(word) for word in word_set("can could may might must shall should will would still")
)
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ']+")


@dataclass(frozen=True)
class NoteLines:
    """The prompt's notes and their note lines, without the day each is filed under."""

    text: str
    lines: tuple[str, ...]

    @classmethod
    def of(cls, notes: str) -> NoteLines:
        return cls(notes, tuple(line for _, line in dated_note_lines(notes)))


CLAUSE_BREAK = re.compile(r"[,;.!?]\s+")
CLAUSE_OR_COLON_BREAK = re.compile(r"[,;:.!?]\s+")  # "Kabir is allergic to cashews: peanuts are fine"
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
SENTENCE_OR_SEMICOLON_BREAK = re.compile(r"(?<=[.;!?])\s+")


def kind_of(word: str) -> str | None:
    """ "weekday", "month" or "number" for a word of that kind (lower-cased), else None."""
    if word in WEEKDAYS:
        return "weekday"
    if word in MONTHS:
        return "month"
    return "number" if word[:1].isdigit() else None


def bare_word(word: str) -> str:
    return word.lower().strip(QUOTES_AND_PUNCTUATION)


def words_of(text: str) -> list[str]:
    """The words of `text`, lower-cased, without a possessive "'s" or a terminal date's brackets."""
    return [word.lower().removesuffix("'s") for word in _WORD.findall(ANCHOR.sub("", text).replace("’", "'"))]


def asked_words(question: str) -> set[str]:
    return {word.strip(QUOTES_AND_PUNCTUATION) for word in question.lower().split()} | set(words_of(question))


def lines_about(question: str, notes: NoteLines, leave_out: frozenset[str]) -> list[str]:
    """The note lines holding a word of the question's subject other than `leave_out` (stems), or a name it gives
    that is no note's speaker ("Is my Tresiba in the morning or the evening?")."""
    subject = subject_stems(question) - leave_out
    names = names_given(question, notes.lines) - leave_out
    if not subject and not names:
        return []
    return [line for line in notes.lines if subject & content_stems(line) or names.intersection(words_of(line))]


def lines_of_its_own_thing(question: str, notes: NoteLines, leave_out: frozenset[str] = frozenset()) -> list[str]:
    """The note lines about the question's own thing: those holding its rarest subject word or name that the notes
    hold at all (each of the rarest, when several are as rare; not `leave_out`, not a number, a modal verb or "still"; a
    medicine's family counts for the medicine, kiosk.llm.families). "The amoxicillin, is that before food or
    after?" is about the amoxicillin's lines, not "No food after 8 for Mum", which shares only "food"."""
    lines = notes.lines
    subject = {stem for stem in subject_stems(question) - leave_out - _NOT_A_THING if stem.isalpha()} | families_of(
        asked_words(question)
    )
    holding = [found for stem in subject if (found := [line for line in lines if stem in content_stems(line)])]
    named = names_given(question, lines)
    holding += [found for name in named if (found := [line for line in lines if name in words_of(line)])]
    if not holding:
        return []
    fewest = min(len(found) for found in holding)
    return list(dict.fromkeys(line for found in holding if len(found) == fewest for line in found))


def clauses_about(question: str, lines: list[str], leave_out: frozenset[str]) -> list[str]:
    """The clauses of `lines` (split at commas and full stops) holding a word of the question's subject other than
    `leave_out` (stems), or a name it gives: "Recycling is Tuesday nights now", not "household rubbish Monday and
    Thursday", for "Is the recycling on Monday?"."""
    subject = subject_stems(question) - leave_out
    names = names_given(question, lines) - leave_out
    return [
        clause
        for line in lines
        for clause in CLAUSE_BREAK.split(line)
        if subject & content_stems(clause) or names.intersection(words_of(clause))
    ]


def any_line_about(question: str, notes: NoteLines) -> bool:
    """True when a note line holds a word of what the question asks about (not only "go", "get", a modal verb or a
    speaker's name), a name it gives that is no note's speaker, the family of a medicine it names, or a weekday,
    month or number it names."""
    asked = asked_sentence(question)
    names = names_given(asked, notes.lines)
    families = families_of(asked_words(asked))
    typed = {word for word in held_words(asked) if kind_of(word)}
    return any(
        says_what_is_asked(asked, line, 1)
        or names.intersection(words_of(line))
        or families & content_stems(line)
        or typed & held_words(line)
        for line in notes.lines
    )


def lines_naming(question: str, notes: NoteLines) -> list[str]:
    """The note lines holding a word of the question's subject or a name it gives."""
    subject = subject_stems(question) - _NOT_A_THING
    names = names_given(question, notes.lines)
    return [line for line in notes.lines if subject & content_stems(line) or names.intersection(words_of(line))]
