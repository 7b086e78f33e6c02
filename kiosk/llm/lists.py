"""The rest of a list the answer began: a question asking for several things answered with one.

Asked "What instruments does Melanie play?", the 0.5B model often names one thing ("Clarinet") although its
notes name more; the prompt's rule "List several things with commas" does not change that. The reply is then
continued from the model's own words with a comma appended ("Clarinet," -> " violin"), and each added item is
kept only when a note states it as an answer: one note line holds its words and also a word of what the question
asks about (its content words other than names, unless it names nothing else) or the first item. Forced to go
on, the model also invents ("flute"), talks ("which is awesome", "they're my main hobbies"), names the other
speaker ("Calvin") or names a thing of an unrelated note: asked "What pills did the doctor give me?",
"Amoxicillin" must never become "Amoxicillin, ibuprofen" because another note says "I took ibuprofen for my
headache" (8 of 23 additions measured before this rule were wrong).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kiosk.llm.answer_form import content_stems, says_unknown, says_what_is_asked, shown_answer, word_set
from kiosk.llm.backend import Message, reply_if_able
from kiosk.llm.prompts import inside_notes, note_speakers, notes_text

# "What instruments does ...", "Which cities has ...", "What kind of books does ...", "What are Joanna's hobbies?"
_OBJECT_FIRST = re.compile(
    r"^(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?:[\w'’-]+\s+){0,2}?(?P<noun>[a-z]+s)\s+"
    r"(?:do|does|did|has|have|had|are|were|is|was)\b",
    re.IGNORECASE,
)
_ARE_LAST = re.compile(r"^what\s+(?:are|were)\s+(?:some\s+)?(?:[\w'’-]+\s+){0,4}?(?P<noun>[a-z]+s)\W*$", re.IGNORECASE)
_NOT_PLURAL = word_set("is was has does his this its us bus gas yes news series species always plus")
ITEM_SEPARATOR = re.compile(r",|;|\band\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\n]")
# A piece that opens like a clause ("which is awesome", "they're my main hobbies", "don't they") is talk.
_CLAUSE_OPENERS = word_set("which who whom that i it he she we they you my me but so because this there")
MAX_ITEM_WORDS = 6
MAX_ANSWER_WORDS = 8
LIST_TOKENS = 24  # the rest of a list of a few short items


def asks_for_several(question: str) -> bool:
    """True when the question asks for things in the plural ("What books has Melanie read?")."""
    text = " ".join(question.split())
    match = _OBJECT_FIRST.match(text) or _ARE_LAST.match(text)
    if match is None:
        return False
    noun = match.group("noun").lower()
    return noun not in _NOT_PLURAL and not noun.endswith("ss")


def names_one_thing(answer: str) -> bool:
    """A short answer that is not a list, yes / no, or "I don't know"."""
    words = answer.split()
    if not words or len(words) > MAX_ANSWER_WORDS or says_unknown(answer):
        return False
    return not ITEM_SEPARATOR.search(answer) and words[0].lower().strip(".,!") not in {"yes", "no"}


def completed_list(
    llm: object,
    messages: list[Message],
    question: str,
    reply: str,
    shown: str,
    *,
    max_tokens: int,
    temperature: float,
    concise: bool,
) -> str | None:
    """`shown` (the shown form of `reply`) with the items the model adds when `reply` is continued after a comma;
    None when the question does not ask for several things, the answer lists already or says nothing, the
    backend cannot continue a reply, or no added item is a thing of the notes. The notes are the prompt's user
    turns, so a worked example of the system prompt never counts as held."""
    if not asks_for_several(question) or not names_one_thing(shown):
        return None
    start = reply.rstrip(" .!") + ","
    more = reply_if_able(llm, "continue_reply", messages, start, max_tokens=max_tokens, temperature=temperature)
    if more is None:
        return None
    items = [shown.rstrip(" .!")]
    is_noted_thing = _noted_thing_test(question, notes_text(messages), items[0])
    for piece in ITEM_SEPARATOR.split(_SENTENCE_END.split(more, maxsplit=1)[0]):
        item = " ".join(piece.split()).strip(" \"'“”‘’")
        if is_noted_thing(item) and item.lower() not in {kept.lower() for kept in items}:
            items.append(item)
    return shown_answer(question, ", ".join(items), concise) if len(items) > 1 else None


# A note line of the prompt (kiosk.llm.prompts.compact_notes, shared_notes) after its marks: "- ", a shared note's
# "(family group note by Tom — not the asker's) " and a speaker's "Tom: ".
_LINE_MARKS = re.compile(r"^(?:-\s+)?(?:\([^()]*\)\s+)?(?:[^\s:()\[\]-][^:()\[\]]{0,40}?:\s)?")


def note_lines(notes: str) -> list[str]:
    """The text of each note line inside the <notes> blocks of `notes`, without its marks (_LINE_MARKS)."""
    return [_LINE_MARKS.sub("", line, count=1) for line in inside_notes(notes).splitlines() if line.strip()]


def _noted_thing_test(question: str, notes: str, first: str) -> Callable[[str], bool]:
    """Whether a piece is a thing the notes state as an answer: short, opening like a thing rather than a clause,
    not one of the notes' speakers, its answer-carrying words not all the question's, and all held by one note
    line that also holds a word of what the question asks about (says_what_is_asked) or the answer's first item. An item
    only some other note names ("I took ibuprofen for my headache" for "What pills did the doctor give me?") is
    never added."""
    asked, first_stems = content_stems(question), content_stems(first)
    lines = [(line, content_stems(line)) for line in note_lines(notes)]
    answering = [
        stems
        for line, stems in lines
        if (first_stems and first_stems <= stems) or says_what_is_asked(question, line, words=1)
    ]
    speakers = note_speakers(notes)

    def is_noted_thing(item: str) -> bool:
        stems = content_stems(item)
        if not stems or len(item.split()) > MAX_ITEM_WORDS or stems <= asked:
            return False
        if not any(stems <= held for held in answering):
            return False
        first_word = item.split()[0].lower().replace("’", "'")
        if first_word.split("'")[0] in _CLAUSE_OPENERS or first_word.endswith("n't"):
            return False
        return item.lower() not in speakers

    return is_noted_thing
