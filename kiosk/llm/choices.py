"""A yes/no or either/or answer the notes about the question contradict becomes the choice they make, or "I don't
know" where they make none (issue #36).

A choosing answer is one word, and a wrong one is harmful: "Do I have swimming on Wednesdays?" -> "Yes" when the
swimming note says Tuesdays and Thursdays; "Do I take the prednisolone with breakfast or at night?" -> "At night"
(the inhaler's "morning and night") when the prednisolone note says "with breakfast". The lines judged are the note
lines about what is asked: a line holding a word of the question's subject (kiosk.llm.answer_form.subject_stems)
other than the options or days it names. Only a plain contradiction withdraws an answer:

- either/or: the answer holds one option, and the lines about the question hold the other option and not that one,
  or hold both and every line saying something changed changes it to the other ("Actually we're moving the lunch
  to Sunday, because Javier works on Saturday": not Saturday), or, none saying so, a line denies it ("porridge
  made with water, not milk");
- yes/no, for a weekday, month or number the question names: "yes" when the lines name none of them but another
  of the same kind ("Wednesday" asked, "Tuesday and Thursday" said), or, asked whether it is still so, when a line
  about the question's own thing says it changed to another ("Is hockey still on Tuesdays?": "moved to
  Wednesdays"); "no" when the lines name each of them and no other of the same kind;
- yes/no, a "yes" a line about the question denies: a word of the question's subject, or a name it gives that is
  no note's speaker, comes just after a denying word ("no aspirin with it", "allergic to latex", "hold tonight's
  warfarin") or just before a word saying it is away ("the lift next to the ward is out until Monday", "Dr Kavanagh
  is on annual leave"). For a word saying it is away the line must also be about the question: hold two of
  those words (all, when there are fewer), or the name it is said of. A question holding such a word itself ("Is
  the lift still out?", "Is Yuna allergic to peanuts?") is not judged this way: there "yes" is the denial. Nor is
  a question about the past ("Did they grow up with a dog?", "Have they been to Rio?"): a note's denial is a
  standing rule or how things are now, and what someone never did once may still have happened (it withdrew three
  right LoCoMo answers). A medicine's family stands for it: "allergic to penicillin" denies "Can Doris have
  amoxicillin?" (kiosk.llm.drug_classes);
- yes/no, "yes" to whether someone is allergic to a thing a line says they are fine with ("Théo is fine with
  peanuts"): "No";
- yes/no, likewise, a "no" a line about the question (two of those words) keeps going: "Keep taking the aspirin
  75 mg with dinner" for "Do I still take the aspirin?"; and a "no" to whether something is still so when no line
  holding the question's rarest word says it ended, changed or was done ("Is Femi still on the apixaban twice a
  day?" -> "No", the apixaban's two lines unchanged since).

A question told with its situation first ("My knee is aching. Can I take some ibuprofen?") is judged by its last
sentence. An answer made only of the question's own words says "yes" ("Is the spare key still under the mat?" ->
"Under the mat").

When the lines hold both options and no change picks one, nothing is judged: the model's answer stands. A yes or no
when no note line is about the question at all (none holds a word of what it asks, a name it gives, a medicine's
family or a day it names) is a guess, and is withdrawn ("Is Claire going for a job interview?" / "Yes").

Where the notes contradict a choice they make one themselves (notes_choice, the answer-contradicted step): the other
option, in the question's words ("In the morning", kiosk.llm.option_phrase), or "No" to a "yes" they deny or whose
day they do not name, when a line giving it is about the question's own thing: it holds the question's rarest
subject word or name (a medicine's family for the medicine). "The amoxicillin, is that before food or after?" is
answered from the amoxicillin's line, never from "No food after 8" which shares only "food": there the answer is
withdrawn. A "no" they contradict is withdrawn, never turned into "yes": a wrong "yes" is the harmful answer. A day
or number such a line says changed from ("put her Lantus up from 10 to 12 units") becomes what it changed to.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import (
    QUOTES_AND_PUNCTUATION,
    asked_sentence,
    asks_yes_or_no,
    content_stems,
    offers_a_choice,
    says_unknown,
    says_what_is_asked,
    subject_stems,
    word_set,
)
from kiosk.llm.drug_classes import families_of
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.option_phrase import TIMINGS, option_phrase
from kiosk.llm.prompts import UNKNOWN_ANSWER, asker_of
from kiosk.llm.superseded import CHANGE, FROM_TO
from kiosk.llm.time_anchors import ANCHOR
from kiosk.llm.unsupported import (
    MONTHS,
    WEEKDAYS,
    held_words,
    names_given,
    note_people,
    said_in,
    supporting_lines,
)
from kiosk.stems import porter_stem

_KINDS = ("weekday", "month", "number")
# What the notes answer when they contradict a choice without making one themselves.
NO_CHOICE = ""
# A word of what is asked right after one of these is refused or stopped: "no aspirin", "allergic to latex".
_DENYING = word_set("no not never avoid without hold stop stopped allergic")
# ... or right before one of these, away: "the lift is out", "Dr Kavanagh is on annual leave".
_AWAY = word_set("out off closed cancelled canceled leave not isn't aren't won't can't")
# A word of what is asked right after one of these goes on: "keep taking the aspirin".
_AFFIRMING = word_set("keep keeps continue continues carry")
# Words of a question that name no thing of it: "Can Biscuit have his breakfast?" is not about "they can", "Is
# hockey still on Tuesdays?" not about "the bill is still to pay".
_NOT_A_THING = frozenset(
    porter_stem(word) for word in word_set("can could may might must shall should will would still")
)
# A question asking whether the asker is the one to do something: "Am I picking Théo up?", "Do I have to set the
# alarm?" (not "Can I ...?", which asks leave).
_ASKS_IF_I_DO = re.compile(r"^\W*(?:am\s+i|will\s+i|shall\s+i|do\s+i\s+have\s+to|have\s+i\s+got\s+to)\b", re.IGNORECASE)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
# A word of what is asked right after one of these does no harm: "Théo is fine with peanuts", asked "Is Théo
# allergic to peanuts?".
_FINE = word_set("fine ok okay safe")
_ALLERGIC = re.compile(r"\ballergic\b", re.IGNORECASE)
_REACH_BEFORE = 2  # words between the denying word and the word it denies: "hold tonight's warfarin"
_REACH_AFTER = 4  # "is on annual leave"
# The openers of a question about now ("Can I ...", "Is the lift ..."), not the past ("Did ...", "Have ...").
_ASKS_ABOUT_NOW = word_set("is are am can could may must should do does will")
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ']+")
_STILL = re.compile(r"\bstill\b", re.IGNORECASE)
# What says a thing ended, changed or was done: "stopped", "no more", "cut the furosemide", "got the slippers",
# and any verb in the past ("ordered").
_ENDED = re.compile(
    r"\b(?:stop\w*|no\s+more|no\s+longer|any\s?more|off|finish\w*|cancel\w*|cut|chang\w*|switch\w*|instead|"
    r"done|already|got|bought|picked\s+up|now|\w+ed)\b",
    re.IGNORECASE,
)


def _kind(word: str) -> str | None:
    if word in WEEKDAYS:
        return "weekday"
    if word in MONTHS:
        return "month"
    return "number" if word[:1].isdigit() else None


def _options(question: str) -> frozenset[str]:
    """The stems of the words an either/or question offers: the nearest content word on each side of each "or"
    ("with breakfast or at night" -> breakfast, night); for a timing left unsaid after the "or", the two timings
    ("before food or after?" -> before, after)."""
    words = question.split()
    options: set[str] = set()
    for index, word in enumerate(words):
        if word.lower() != "or":
            continue
        after = [_bare_word(other) for other in words[index + 1 :]]
        timing = next(
            (other for other in reversed(words[max(0, index - 3) : index]) if _bare_word(other) in TIMINGS), None
        )
        if len(after) == 1 and after[0] in TIMINGS and timing is not None:
            options.update(content_stems(f"{timing} {after[0]}"))
            continue
        for side in (reversed(words[:index]), words[index + 1 :]):
            stem = next((stems for other in side if (stems := content_stems(other))), None)
            if stem:
                options.update(stem)
    return frozenset(options)


def _bare_word(word: str) -> str:
    return word.lower().strip(QUOTES_AND_PUNCTUATION)


def _lines_about(question: str, notes: str, leave_out: frozenset[str]) -> list[str]:
    """The note lines holding a word of the question's subject other than `leave_out` (stems)."""
    subject = subject_stems(question) - leave_out
    if not subject:
        return []
    return [line for _, line in dated_note_lines(notes) if subject & content_stems(line)]


def _asked_words(question: str) -> set[str]:
    return {word.strip(QUOTES_AND_PUNCTUATION) for word in question.lower().split()} | set(_words(question))


def _lines_of_its_own_thing(question: str, notes: str, leave_out: frozenset[str] = frozenset()) -> list[str]:
    """The note lines about the question's own thing: those holding its rarest subject word or name that the notes
    hold at all (each of the rarest, when several are as rare; not `leave_out`, not a number, a modal verb or "still"; a
    medicine's family counts for the medicine, kiosk.llm.drug_classes). "The amoxicillin, is that before food or
    after?" is about the amoxicillin's lines, not "No food after 8 for Mum", which shares only "food"."""
    lines = [line for _, line in dated_note_lines(notes)]
    subject = {stem for stem in subject_stems(question) - leave_out - _NOT_A_THING if stem.isalpha()} | families_of(
        _asked_words(question)
    )
    holding = [found for stem in subject if (found := [line for line in lines if stem in content_stems(line)])]
    holding += [found for name in names_given(question, lines) if (found := [ln for ln in lines if name in _words(ln)])]
    if not holding:
        return []
    fewest = min(len(found) for found in holding)
    return list(dict.fromkeys(line for found in holding if len(found) == fewest for line in found))


def _any_line_about(question: str, notes: str) -> bool:
    """True when a note line holds a word of what the question asks about (not only "go", "get", a modal verb or a
    speaker's name), a name it gives that is no note's speaker, the family of a medicine it names, or a weekday,
    month or number it names."""
    lines = [line for _, line in dated_note_lines(notes)]
    asked = asked_sentence(question)
    names = names_given(asked, lines)
    families = families_of(_asked_words(asked))
    typed = {word for word in held_words(asked) if _kind(word)}
    return any(
        says_what_is_asked(asked, line, 1)
        or names.intersection(_words(line))
        or families & content_stems(line)
        or typed & held_words(line)
        for line in lines
    )


def _lines_naming(question: str, notes: str) -> list[str]:
    """The note lines holding a word of the question's subject or a name it gives."""
    lines = [line for _, line in dated_note_lines(notes)]
    subject = subject_stems(question) - _NOT_A_THING
    names = names_given(question, lines)
    return [line for line in lines if subject & content_stems(line) or names.intersection(_words(line))]


def _notes_options(question: str, answer: str, notes: str) -> frozenset[str] | None:
    """The options (stems) the lines about an either/or question give where they contradict the one `answer`
    chooses (empty when they contradict it without giving one); None when they do not contradict it."""
    options = _options(question)
    chosen = options & content_stems(answer)
    if len(chosen) != 1 or len(options) < 2:
        return None
    lines = _lines_about(question, notes, options)
    held = content_stems(" ".join(lines))
    if chosen & held and (options - chosen) & held:
        changed_to = frozenset(
            option for line in lines if (option := _first_option_after_change(line, options)) is not None
        )
        if changed_to:
            return changed_to if len(changed_to) == 1 and not chosen & changed_to else None
        left = options - _denied(lines, options)
        return left if len(left) == 1 and not chosen & left else None
    return (options - chosen) & held if not chosen & held and (options - chosen) & held else None


def _denied(lines: list[str], options: frozenset[str]) -> frozenset[str]:
    """The options a line denies: named just after a denying word ("made with water, not milk")."""
    denied: set[str] = set()
    for line in lines:
        words = _words(line)
        for index, word in enumerate(words):
            stem = porter_stem(word)
            if stem in options and _DENYING.intersection(words[max(0, index - _REACH_BEFORE - 1) : index]):
                denied.add(stem)
    return frozenset(denied)


def _first_option_after_change(line: str, options: frozenset[str]) -> str | None:
    """The option a line changes things to: the first option named after its change word, not after "from"
    ("Actually we're moving the lunch to Sunday the 4th, because Javier works on Saturday" -> Sunday; "Aqua
    aerobics moved from Wednesday to Thursday" -> Thursday); None without a change word."""
    change = CHANGE.search(line)
    if change is None:
        return None
    words = line[change.end() :].split()
    return next(
        (
            stem
            for index, word in enumerate(words)
            if not (index and words[index - 1].lower() == "from")  # "moved from Wednesday to Thursday"
            for stem in content_stems(word)
            if stem in options
        ),
        None,
    )


def _first_word(answer: str) -> str:
    return answer.split()[0].lower().strip(",.!") if answer.split() else ""


def _yes_or_no(question: str, answer: str) -> str:
    """The "yes" or "no" `answer` gives: its first word, or "yes" for an answer made only of the question's own
    words, which confirms that part of it ("Is the spare key still under the mat?" -> "Under the mat")."""
    first = _first_word(answer)
    if first in ("yes", "no"):
        return first
    said = content_stems(answer)
    return "yes" if said and said <= content_stems(asked_sentence(question)) else first


def _yes_or_no_against_kind(question: str, answer: str, notes: str) -> str | None:
    """What the lines about a yes/no question naming a weekday, month or number say where they contradict the
    yes or no `answer` gives (see the module's docstring): "No" to a "yes" when they name another one of that
    kind and not it; NO_CHOICE to a "no" when they name it and no other (naming October does not say the rent for
    October was paid); None when they do not contradict it."""
    first = _yes_or_no(question, answer)
    if first not in ("yes", "no"):
        return None
    asked = {word for word in held_words(question) if _kind(word)}
    if not asked:
        return None
    leave_out = frozenset(porter_stem(word) for word in asked)
    lines = _lines_about(question, notes, leave_out)
    if not lines:
        return None
    said = {word for word in held_words(" ".join(lines)) if _kind(word)}
    for kind in _KINDS:
        asked_here = {word for word in asked if _kind(word) == kind}
        said_here = {word for word in said if _kind(word) == kind}
        if not asked_here:
            continue
        if first == "yes" and not asked_here & said_here and said_here:
            own = held_words(" ".join(_lines_of_its_own_thing(question, notes, leave_out)))
            return "No" if {word for word in own if _kind(word) == kind} - asked_here else NO_CHOICE
        if (
            first == "yes"
            and _STILL.search(asked_sentence(question))
            and _changed_to_another(question, notes, leave_out, kind, asked_here)
        ):
            return "No"
        if first == "no" and asked_here <= said_here and not said_here - asked_here:
            return NO_CHOICE
    return None


def _changed_to_another(question: str, notes: str, leave_out: frozenset[str], kind: str, asked: set[str]) -> bool:
    """True when a line about the question's own thing says it changed and names another weekday, month or number
    of `kind` than `asked` ("Is hockey still on Tuesdays?": "hockey practice moved to Wednesdays")."""
    changed = [line for line in _lines_of_its_own_thing(question, notes, leave_out) if CHANGE.search(line)]
    named = held_words(ANCHOR.sub(" ", " ".join(changed)))
    return bool({word for word in named if _kind(word) == kind} - asked)


def _someone_else_does_it(question: str, notes: str) -> bool:
    """True when the asker asks whether they are the one to do something ("Am I picking Théo up from hockey
    tomorrow?") and the sentences of the lines about it say one other person does it ("Marc will pick Théo up from
    hockey on Wednesdays"), not the asker."""
    asker = asker_of(notes)
    if asker is None or not _ASKS_IF_I_DO.match(asked_sentence(question)):
        return False
    subject = subject_stems(asked_sentence(question))
    lines = supporting_lines(question, notes, with_days=False, words=2)
    sentences = [part for line in lines for part in _SENTENCE_BREAK.split(line) if subject & content_stems(part)]
    said = said_in(sentences)
    doers = note_people(line for _, line in dated_note_lines(notes)) & said - held_words(question)
    return len(doers) == 1 and asker.lower() not in said


def _words(text: str) -> list[str]:
    return [word.lower().removesuffix("'s") for word in _WORD.findall(ANCHOR.sub("", text).replace("’", "'"))]


def _asks_about_now(question: str) -> bool:
    """True for a question about how things are now that names no denial itself (see the module's docstring)."""
    asked = _words(asked_sentence(question))
    return bool(asked) and asked[0] in _ASKS_ABOUT_NOW and not (_DENYING | _AWAY).intersection(asked)


def _said_of(
    question: str, notes: str, before: frozenset[str], after: frozenset[str], *, about_before: bool = False
) -> str | None:
    """The note line that holds a word of `question`'s subject, a name it gives that is no note's speaker, or
    the family of a medicine it names ("penicillin" for "amoxicillin", kiosk.llm.drug_classes) just after a word of
    `before` (in a line about the question, when `about_before`), or, in a line about the question, just before a
    word of `after`, or None. A line is about the question when it holds two of those words (all, when there are
    fewer), or the name the word is."""
    lines = [line for _, line in dated_note_lines(notes)]
    subject = subject_stems(question) | families_of(_asked_words(question))
    names = names_given(question, lines)
    wanted = len(subject) + len(names)
    for line in lines:
        words = _words(line)
        stems = [porter_stem(word) for word in words]
        held = subject.intersection(stems) | names.intersection(words)
        for index, (word, stem) in enumerate(zip(words, stems, strict=True)):
            if stem not in subject and word not in names:
                continue
            about = len(held) >= min(2, wanted) or word in names
            if (about or not about_before) and before.intersection(words[max(0, index - _REACH_BEFORE - 1) : index]):
                return line
            if about and after.intersection(words[index + 1 : index + 1 + _REACH_AFTER]):
                return line
    return None


def _no_without_an_end(question: str, answer: str, notes: str) -> bool:
    """True for a "no" to a question asking whether something is still so ("Is Femi still on the apixaban twice a
    day?") when no line about it says it ended or changed: the lines holding the question's rarest subject word
    that the notes hold at all (not a number: "Is the alarm code still 1984?" is about the alarm code), none with a
    word of ending, changing or doing (_ENDED)."""
    if _first_word(answer) != "no" or not _STILL.search(asked_sentence(question)):
        return False
    about = _lines_of_its_own_thing(question, notes)
    return bool(about) and not any(_ENDED.search(line) for line in about)


def _notes_answer(question: str, answer: str, notes: str) -> str | None:
    """What the notes about `question` answer where they contradict the choice `answer` makes: the other option
    of an either/or question, "No" to a "yes" they deny or whose weekday, month or number they do not name;
    NO_CHOICE when they contradict it without one answer, and for a "no" they contradict: a wrong "yes" is the
    harmful one (36 of the 41 yes/no questions of the household dev and test sets name "Yes" as harmful: a medicine
    still taken when the note stopping it was not retrieved), so no check says it; None when they do not
    contradict it."""
    if says_unknown(answer):
        return None
    if offers_a_choice(question):
        given = _notes_options(question, answer, notes)
        if given is None:
            return None
        if len(given) != 1 or not given <= content_stems(" ".join(_lines_of_its_own_thing(question, notes, given))):
            return NO_CHOICE
        return option_phrase(question, next(iter(given))) or NO_CHOICE
    if asks_yes_or_no(question):
        first = _yes_or_no(question, answer)
        if first in ("yes", "no") and not _any_line_about(question, notes):
            return NO_CHOICE
        if first == "yes" and _someone_else_does_it(question, notes):
            return "No"
        if (
            first == "yes"
            and _ALLERGIC.search(asked_sentence(question))
            and _said_of(question, notes, _FINE, frozenset())
        ):
            return "No"
        if first in ("yes", "no") and _asks_about_now(question):
            denying = _said_of(question, notes, _DENYING, _AWAY) if first == "yes" else None
            if denying is not None:
                return "No" if denying in _lines_of_its_own_thing(question, notes) else NO_CHOICE
            if first == "no" and _said_of(question, notes, _AFFIRMING, frozenset(), about_before=True) is not None:
                return NO_CHOICE
            if _no_without_an_end(question, answer, notes):
                return NO_CHOICE
        return _yes_or_no_against_kind(question, answer, notes)
    return None


def contradicted(question: str, answer: str, notes: str) -> bool:
    """True when the notes about `question` contradict the choice `answer` makes (see the module's docstring)."""
    return _notes_answer(question, answer, notes) is not None


def checked_choice(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for a choice the notes about the question contradict; None keeps the answer."""
    return UNKNOWN_ANSWER if contradicted(question, answer, notes) else None


def _changed_value(question: str, answer: str, notes: str) -> str | None:
    """`answer` with a day or number that a line naming a word of the question's subject or a name it gives says
    changed from, as that line says it changed to: "10 units" or "10" -> "12 units" or "12" after "Dr Nguyen put
    her Lantus up from 10 to 12 units", never across kinds or units ("12 November" stays). None when no line says
    so."""
    if says_unknown(answer):
        return None
    asked = held_words(question)
    for line in reversed(_lines_naming(question, notes)):
        for change in FROM_TO.finditer(ANCHOR.sub(" ", line)):
            old, new, unit = change.group("old").lower(), change.group("new").rstrip(".,"), change.group("unit")
            if old in asked or not _kind(old) or _kind(old) != _kind(new.lower()):
                continue
            said = re.search(rf"\b{re.escape(old)}\b(?:\s+(?P<after>[A-Za-z]+))?", answer, re.IGNORECASE)
            if said is None or (said.group("after") and (unit or "").lower() != said.group("after").lower()):
                continue
            return answer[: said.start()] + new + answer[said.start() + len(old) :]
    return None


def notes_choice(question: str, answer: str, notes: str) -> str | None:
    """The choice the notes about `question` make where they contradict the one `answer` makes ("In the morning"
    for "In the evening" when the ramipril's line says morning; "No" for a "yes" to amoxicillin for someone
    allergic to penicillin), or the value a line says the answer's changed to ("12 units" for "10 units" after "up
    from 10 to 12 units"), when they make one; None otherwise."""
    given = _notes_answer(question, answer, notes)
    return given if given else _changed_value(question, answer, notes)
