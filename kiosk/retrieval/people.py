"""People a question names ("What exercises has John done?") and the people a note's context names as its
speaker ("John said this on 8 May 2023."), for a ranking of the named person's own notes.

Someone asking what John did wants what John said: on LoCoMo 96 % of the evidence turns of questions naming one
speaker are that speaker's own, while plain semantic top-10 draws only half its notes from them (the other person's
replies on the same topic). A name is a capitalised word that is not a question or function word, a month or a
weekday; matching is on whole words, case-sensitive, possessives stripped ("John's" names John).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from kiosk.retrieval.dates import MONTHS

_WORD = re.compile(r"\b[A-Z][a-zA-Z\-]+(?:'s|’s)?\b")
_FUNCTION_WORDS = (
    "what when where who whom whose which why how did does do is are was were has have had can could would "
    "will should shall may might must am be been being i i'm my me mine we our us you your he his him she her "
    "they their them it its the a an and or but if so to of in on at by for from with about as after before "
    "during since until than then that this these those there here not no yes any all both each either every "
    "some one ever also just said says say tell told please according besides except other others "
    "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow mr mrs ms dr"
)
_NOT_NAMES = frozenset(word.capitalize() for word in _FUNCTION_WORDS.split()) | frozenset(
    name.capitalize() for name in MONTHS
)


def _name_words(text: str) -> Iterator[str]:
    """The capitalised words of `text` that can be names, in order, possessives stripped."""
    for match in _WORD.finditer(text):
        word = re.sub(r"(?:'s|’s)$", "", match.group(0))
        if word not in _NOT_NAMES and not word.isupper():
            yield word


def named_people(question: str) -> frozenset[str]:
    """The names a question mentions: capitalised words that are not question, function or calendar words."""
    return frozenset(_name_words(question))


def context_speaker(context: str) -> frozenset[str]:
    """The first name in a note's context sentence: who speaks, which both constructions put first ("Caroline
    said this on ..., replying to Melanie: ..."; the LLM's "one sentence saying who speaks, when, ...")."""
    return frozenset(itertools.islice(_name_words(context), 1))
