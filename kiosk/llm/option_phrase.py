"""The words of an either/or question that name one of its options, to answer with them: "Do I take the ramipril
in the morning or in the evening?" -> "In the morning"; "The amoxicillin, is that before food or after?" -> "After
food"; "Is aqua aerobics on Wednesday or Thursday this week?" -> "Thursday".

An option's phrase is the option's word with the words leading into it ("in the", "with", "on an") and the
content words right after it ("silicone dressings"), not a word of time after it ("this week"). A bare timing
("after") takes the object the other option's timing has ("before food" -> "after food"). A question asking what,
which or who ("What has Audrey bought or made?") offers no options to answer with.
"""

from __future__ import annotations

from kiosk.llm.answer_form import QUOTES_AND_PUNCTUATION, asked_sentence, content_stems, word_set

# Words giving when a thing is taken or done relative to another; "before food or after?" leaves the "food" unsaid.
TIMINGS = word_set("before after with without during")
_ASKING_WHAT = word_set("what which who whom whose where when why how")
# Words leading into an option: "in the morning", "with food", "on an empty stomach".
_LEADING = word_set("in on at with without before after during by for the a an one of")
# Words after an option that say when, not what: "on Wednesday or Thursday this week".
_TIME_WORDS = word_set("this next last week weekend today tonight tomorrow morning evening afternoon night")


def _bare(word: str) -> str:
    return word.lower().strip(QUOTES_AND_PUNCTUATION)


def _phrase(side: list[str], option: str) -> tuple[int, int] | None:
    """The span (start, end) of `option`'s phrase in `side`, the words on one side of the "or"."""
    at = next((index for index, word in enumerate(side) if option in content_stems(word)), None)
    if at is None:
        return None
    start = at
    while start > 0 and _bare(side[start - 1]) in _LEADING:
        start -= 1
    end = at + 1
    while end < len(side) and content_stems(side[end]) and _bare(side[end]) not in _TIME_WORDS:
        end += 1
    return start, end


def _timing_object(side: list[str]) -> list[str]:
    """The words after the timing on one side of the "or" ("before food" -> ["food"])."""
    at = next((index for index, word in enumerate(side) if _bare(word) in TIMINGS), None)
    return [] if at is None else side[at + 1 :]


def option_phrase(question: str, option: str) -> str | None:
    """The words of `question` naming `option` (a stem of kiosk.llm.answer_form.content_stems), capitalised as an
    answer; None when the question asks what, which or who, has no "or", or does not hold the option."""
    words = [word.strip("?!.,;:") for word in asked_sentence(question).split()]
    words = [word for word in words if word]
    if not words or _bare(words[0]) in _ASKING_WHAT:
        return None
    or_at = next((index for index, word in enumerate(words) if _bare(word) == "or"), None)
    if or_at is None:
        return None
    sides = (words[or_at + 1 :], words[:or_at])
    for this, other in (sides, sides[::-1]):
        span = _phrase(this, option)
        if span is None:
            continue
        phrase = this[span[0] : span[1]]
        if len(phrase) == 1 and _bare(phrase[0]) in TIMINGS:
            phrase = phrase + _timing_object(other)
        text = " ".join(phrase)
        return text[:1].upper() + text[1:]
    return None
