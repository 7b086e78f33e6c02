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

from kiosk.llm.answer_form import content_stems, telling_words

__all__ = ["best_note_alone_holds_a_telling_word", "telling_words"]


def best_note_alone_holds_a_telling_word(question: str, best: str, others: Sequence[str]) -> bool:
    """True when the retrieved note most similar to `question` holds one of its telling words that none of the
    `others` holds."""
    held_elsewhere = frozenset(stem for note in others for stem in content_stems(note))
    return bool(telling_words(question) & content_stems(best) - held_elsewhere)
