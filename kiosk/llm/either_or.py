"""What the notes about an either/or question answer where they contradict the option the model chose
(kiosk.llm.choices).

The answer holds one option, and the lines about the question hold the other option and not that one, or hold both
and every line saying something changed changes it to the other ("Actually we're moving the lunch to Sunday,
because Javier works on Saturday": not Saturday), or, none saying so, a line denies it ("porridge made with water,
not milk"). When the lines hold both options and no change picks one, nothing is judged: the model's answer stands.
Small numbers are compared spelled out: "at ten or at two?" asked, "moved to Saturday at 2" said.

The notes' own choice is the other option, in the question's words ("In the morning", kiosk.llm.option_phrase), when
a line about the question's own thing gives it: "The amoxicillin, is that before food or after?" is answered from
the amoxicillin's line, never from "No food after 8" which shares only "food"; there the answer is withdrawn.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import content_stems, subject_stems
from kiosk.llm.compared_words import NUMBER_WORDS
from kiosk.llm.option_phrase import TIMINGS, option_phrase
from kiosk.llm.question_lines import (
    DENYING,
    NO_CHOICE,
    REACH_BEFORE,
    NoteLines,
    bare_word,
    clauses_about,
    lines_about,
    lines_of_its_own_thing,
    words_of,
)
from kiosk.llm.superseded import words_after_change
from kiosk.stems import porter_stem

_AND = re.compile(r"\s+(?:and|but)\s+", re.IGNORECASE)
# A small whole number, not part of a time, dose or date: the 2 of "at 2", not of "2:30", "2.5 mg" or "the 2nd".
_SMALL_NUMBER = re.compile(r"(?<![\d.:,])\b(?:1[0-2]|\d)\b(?![.:,]\d)")
_SPELLED = {int(digits): word for word, digits in NUMBER_WORDS.items() if int(digits) <= 12}


def either_or_answer(question: str, answer: str, notes: NoteLines) -> str | None:
    """The other option in the question's words where the notes about the either/or `question` contradict the
    option `answer` chooses and a line about its own thing gives that option; NO_CHOICE when they contradict it
    otherwise; None when they do not contradict it."""
    question, answer = _spelled(question), _spelled(answer)
    notes = NoteLines(_spelled(notes.text), tuple(_spelled(line) for line in notes.lines))
    given = _notes_options(question, answer, notes)
    if given is None:
        return None
    own = lines_of_its_own_thing(question, notes, _options(question))
    if len(given) != 1 or not given <= content_stems(" ".join(own)):
        return NO_CHOICE
    return option_phrase(question, next(iter(given))) or NO_CHOICE


def _spelled(text: str) -> str:
    """`text` with its small whole numbers spelled out ("at 2" -> "at two")."""
    return _SMALL_NUMBER.sub(lambda number: _SPELLED[int(number.group())], text)


def _options(question: str) -> frozenset[str]:
    """The stems of the words an either/or question offers: the nearest content word on each side of each "or"
    ("with breakfast or at night" -> breakfast, night); for a timing left unsaid after the "or", the two timings
    ("before food or after?" -> before, after)."""
    words = question.split()
    options: set[str] = set()
    for index, word in enumerate(words):
        if word.lower() != "or":
            continue
        after = [bare_word(other) for other in words[index + 1 :]]
        timing = next(
            (other for other in reversed(words[max(0, index - 3) : index]) if bare_word(other) in TIMINGS), None
        )
        if len(after) == 1 and after[0] in TIMINGS and timing is not None:
            options.update(content_stems(f"{timing} {after[0]}"))
            continue
        for side in (reversed(words[:index]), words[index + 1 :]):
            stem = next((stems for other in side if (stems := content_stems(other))), None)
            if stem:
                options.update(stem)
    return frozenset(options)


def _notes_options(question: str, answer: str, notes: NoteLines) -> frozenset[str] | None:
    """The options (stems) the lines about an either/or question give where they contradict the one `answer`
    chooses (empty when they contradict it without giving one); None when they do not contradict it."""
    options = _options(question)
    chosen = options & content_stems(answer)
    if len(chosen) != 1 or len(options) < 2:
        return None
    lines = lines_about(question, notes, options)
    held = content_stems(" ".join(lines))
    if chosen & held and (options - chosen) & held:
        changed_to = frozenset(
            option for line in lines if (option := _first_option_after_change(line, options)) is not None
        )
        if changed_to:
            return changed_to if len(changed_to) == 1 and not chosen & changed_to else None
        left = options - _denied(lines, options)
        if len(left) == 1:
            return left if not chosen & left else None
        told = _options_beside_its_thing(question, lines, options)
        return told if len(told) == 1 and not chosen & told else None
    return (options - chosen) & held if not chosen & held and (options - chosen) & held else None


def _options_beside_its_thing(question: str, lines: list[str], options: frozenset[str]) -> frozenset[str]:
    """The options named in the clauses of the lines about the question's own thing that name that thing ("My
    Tresiba dose is 18 units every evening", not "my morning sugars are too high" after "Dr Berthier wants my
    Tresiba up to 20 units"); where such clauses name both, those of their parts between "and" or "but" that hold
    the most words of the thing ("the furosemide water tablet at lunchtime" of "My tablets are the bisoprolol in the
    morning and the furosemide water tablet at lunchtime", asked about the water tablet)."""
    own = lines_of_its_own_thing(question, NoteLines(" ".join(lines), tuple(lines)), options)
    clauses = clauses_about(question, own, options)
    told = options & content_stems(" ".join(clauses))
    if len(told) < 2:
        return told
    thing = subject_stems(question) - options
    parts = [(len(thing & content_stems(part)), part) for clause in clauses for part in _AND.split(clause)]
    if any(content_stems(part) <= options for _, part in parts):  # "morning and night": the options, listed
        return told
    most = max(held for held, _ in parts)
    return options & content_stems(" ".join(part for held, part in parts if held == most)) if most else told


def _denied(lines: list[str], options: frozenset[str]) -> frozenset[str]:
    """The options a line denies: named just after a denying word ("made with water, not milk")."""
    denied: set[str] = set()
    for line in lines:
        words = words_of(line)
        for index, word in enumerate(words):
            stem = porter_stem(word)
            if stem in options and DENYING.intersection(words[max(0, index - REACH_BEFORE - 1) : index]):
                denied.add(stem)
    return frozenset(denied)


def _first_option_after_change(line: str, options: frozenset[str]) -> str | None:
    """The option a line changes things to: the first option named after its change word, not after "from"
    ("Actually we're moving the lunch to Sunday the 4th, because Javier works on Saturday" -> Sunday; "Aqua
    aerobics moved from Wednesday to Thursday" -> Thursday); None without a change word."""
    return next(
        (stem for word in words_after_change(line) for stem in content_stems(word) if stem in options),
        None,
    )
