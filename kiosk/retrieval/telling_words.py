"""A retrieval under the relevance floor is kept when its best note alone holds a telling word of the question.

The floor (kiosk.retrieval.relevance) was calibrated on LoCoMo's long chat turns; a family's notes are short, and
the note that answers scores just under it: "Which exercises do I have to do?" against "The physiotherapist comes
on Tuesdays and Fridays at ten. I have to do my exercises twice a day" is 0.407, "What's still on the shopping
list?" against "Shopping list: lactose-free milk for Georges, bread, eggs" 0.329. A telling word is one of the
question's subject words (kiosk.llm.answer_form.subject_stems) that is no time word ("tomorrow", "week"), common
verb ("take", "need"), modal verb, or word for what any thing has ("name", "number", "code": "What is the name of
my boss?" is not about "a beagle puppy named Biscuit"). Held by the most similar note and by no other retrieved
note, it marks that note as about the question, where a word many notes hold does not; held only by a weaker note
("tablet" in "the wifi password for the tablet", asked "What tablets am I on?") it is not enough.
"""

from __future__ import annotations

from collections.abc import Sequence

from kiosk.llm.answer_form import TIME_WORDS, content_stems, subject_stems, word_set
from kiosk.stems import porter_stem

_NOT_TELLING = frozenset(
    porter_stem(word)
    for word in TIME_WORDS
    | word_set(
        "go goes going get gets got come comes came make makes made take takes have has had do does did need needs "
        "give gives new back can could may might must shall should will would want name names number code kind sort "
        "type thing things place way"
    )
)
_MIN_LETTERS = 3


def telling_words(question: str) -> frozenset[str]:
    """The stems of the question's subject words that can mark a note as about it."""
    return frozenset(
        stem for stem in subject_stems(question) - _NOT_TELLING if stem.isalpha() and len(stem) >= _MIN_LETTERS
    )


def best_note_alone_holds_a_telling_word(question: str, best: str, others: Sequence[str]) -> bool:
    """True when the retrieved note most similar to `question` holds one of its telling words that none of the
    `others` holds."""
    held_elsewhere = frozenset(stem for note in others for stem in content_stems(note))
    return bool(telling_words(question) & content_stems(best) - held_elsewhere)
