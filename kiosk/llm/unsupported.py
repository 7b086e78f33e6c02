"""An answer naming a day, date, time, amount, dose or person the notes about the question do not name becomes "I don't
know" (issue #36).

On a family terminal the harmful answers are a wrong day, dose or person: the 0.5B model copies one from a note about
something else ("Who's letting the phone engineers in on Saturday?" -> "Aoife", who does the Saturday flu clinic; "How
much did the new dishwasher cost?" -> "20 kronor", the parking) or makes one up ("What time does Farmor's party start?"
-> "10:00", in no note). Unlike kiosk.llm.grounding, which asks the notes for every word an answer adds, this check
looks only at those typed words, the ones that do harm when wrong: numbers (times, amounts, doses, days of the month,
years), weekdays, months, and names (a word the notes write only with a capital, or a note's speaker or author). Each
such word of the answer that the question does not already hold must be in a note line about what the question asks
(kiosk.llm.answer_form.says_what_is_asked, one word of its subject, two when it asks who) or in the reply that follows
such a line in a conversation, or in the day that line is filed under; when no line is about it, in any note line; never
in a line about the other side of what the question names by its side (asked "What's the code for the front door?", the
0.5B model gave the back door's code), in a line about its speaker's own things when the question asks about another
person's ("What's Grace's locker code?" -> the asker's own PIN), in a line sharing with the question only a word many
notes hold ("code", "number", "time") when the question says of what ("What's the code for the safe?" -> a door code),
nor in a line without the name of a person the question names by title ("When is Mama's next appointment with Doctor
Bello?" -> the day of Mama's birthday lunch). Asked when something is or will be, the day a line is filed under does not
count: it is when the line was said ("When is my mum's birthday?" -> "14 October 2026", the day another birthday was
mentioned), and a relative day in a line carries its own date (kiosk.llm.time_anchors). Otherwise the answer is shown as
"I don't know". So is an answer of another kind than the question asks for (kiosk.llm.answer_kinds: a day for "What
time ...?", one reading for a range), and a number of another kind than the notes hold it as (kiosk.llm.number_kinds:
"$11" from "the hairdresser comes on Fridays at 11"): it does not answer what was asked. A yes/no or either/or answer
chooses rather than names (kiosk.llm.choices checks those), and an answer without such words is left alone.

Asked who does something ("Who is coming into bed 2 tonight?"), a person must also be in a sentence telling someone
or something does it ("A new admission is coming into bed 2 tonight"), where the notes have one. A weekday counts as
held where a line gives its date ("Tuesday 17 November" from "the 17th (17 November 2026)").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise

from kiosk.llm.answer_form import (
    FAMILY_WORDS,
    asks_when_it_is,
    asks_yes_or_no,
    content_stems,
    offers_a_choice,
    says_unknown,
    says_what_is_asked,
    subject_stems,
    telling_words,
)
from kiosk.llm.answer_kinds import of_another_kind
from kiosk.llm.asked_verb import asked_verbs
from kiosk.llm.compared_words import MONTHS, WEEKDAYS, bare_token, held_words, typed_words, word_tokens
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.note_speakers import (
    names_given,
    note_names,
    only_done_to,
    said_in,
    speaker_match,
    spoken_text,
)
from kiosk.llm.past_days import days_with_year
from kiosk.llm.prompts import LABEL_AUTHOR, UNKNOWN_ANSWER, asker_of
from kiosk.llm.question_lines import SENTENCE_OR_SEMICOLON_BREAK
from kiosk.local_time import WEEKDAYS as WEEKDAY_ORDER
from kiosk.stems import porter_stem

# A person named beside one word of a "who" question is often there for something else: "Denise will validate
# visitors' parking" does not answer "Who is doing my Tuesday visitor tours?".
_ASKS_WHO = re.compile(r"\W*who(?:m|se|['’]s)?\b", re.IGNORECASE)
_ASKS_HOW_OFTEN = re.compile(r"\bhow\s+often\b|\bhow\s+many\s+times\s+(?:a|an|per|each)\b", re.IGNORECASE)
# Words that say how often, typed words of an answer to "How often ...?" ("twice a day" for "every second day").
_HOW_OFTEN_WORDS = frozenset(
    ["once", "twice", "thrice", "daily", "nightly", "weekly", "fortnightly", "monthly", "hourly"]
)
_LABELLED = re.compile(r"^- \(")  # another author's note, as kiosk.llm.prompts.shared_notes writes it
_MY_RELATIVE = re.compile(
    r"\bmy\s+(?:\w+\s+)?(?:mum|mom|mother|dad|father|parents?|son|daughter|kids?|children|child|boy|girl|baby|wife|"
    r"husband|partner|brother|sister|gran\w*|grand\w*|nan|nana|aunt\w*|uncle|cousin|niece|nephew|family|friend)",
    re.IGNORECASE,
)
# Words naming one side of a thing: a note about one side says nothing about the other.
_SIDES = {
    pair: frozenset(pair.split())
    for pair in (
        "front back",
        "left right",
        "upstairs downstairs",
        "upper lower",
        "top bottom",
        "inside outside",
        "indoor outdoor",
        "north south",
        "east west",
    )
}
# A title names no one on its own: "Doctor Bello" is one person.
TITLES = frozenset({"doctor", "dr", "mr", "mrs", "ms", "miss", "nurse", "sister", "auntie", "uncle", "coach"})
# Words a question shares with many notes about other things: "the code for the safe" is not "the staff room code".
_GENERIC_STEMS = frozenset(
    porter_stem(word)
    for word in ("code", "pin", "password", "combination", "number", "phone", "time", "date", "price", "cost")
)
_CLAUSE_BREAK = re.compile(r"[,;.]\s+|\s+(?:and|but|while)\s+")
# A word before a verb that says someone does it: "is coming", "will collect", "I'll come Monday and let him in";
# not "needs to let him in", which says it must be done, not who does it.
_AUXILIARY = re.compile(r"^(?:is|are|am|was|were|will|can|\w+['’](?:ll|s|re|m))$")
# The one something is done for or in place of, not the one doing it: "cover Thursday morning for Omar".
_DONE_FOR = re.compile(r"\b(?:for|instead\s+of)\s+[A-Z][\w'’-]*")
_AGE_BAND = re.compile(r"\b(over|under)[- ]?(\d+)", re.IGNORECASE)


def lines_about(question: str, notes: str, *, with_days: bool = True, words: int = 1) -> list[str]:
    """The note lines of `notes` about what `question` asks, each with the day it is filed under (unless not
    `with_days`), and the reply that follows each in a conversation; every note line when none is about it. A line
    is about it when it holds `words` words of the question's subject, or a name the question gives that is no
    note's speaker or author ("Uppsala", "Farmor"; every line of a person names them), not what a family calls a
    member ("Nana") where a line holds another name it gives ("Asda"). A reply is the next line of
    the same day spoken by someone else in the same person's notes ("How long have you been married?" / "5 years
    already!"): the answer is often there, in words of its own. A reply holding a word of the subject, a common verb
    too, carries on to its own reply ("... a concert for my daughter's birthday" / "What concert was it?" / "Matt
    Patterson!"; "I'm off to Ireland for a semester" / "Where are you going to stay?" / "in Galway")."""
    return [_with_day(day, line, with_days) for day, line in _dated_lines_about(question, notes, words)]


def _with_day(day: str, line: str, with_days: bool) -> str:
    return f"{day} {line}" if with_days else line


def _dated_lines_about(question: str, notes: str, words: int) -> list[tuple[str, str]]:
    """lines_about as (day filed under, line) pairs."""
    lines = dated_note_lines(notes)
    named = names_given(question, [line for _, line in lines])
    other_names = named - FAMILY_WORDS
    if other_names != named and any(other_names & held_words(line) for _, line in lines):
        named = other_names  # "What does Nana need from Asda?": the Asda line, not "Nana's drops after the hospital"
    holds_name = [bool(named & held_words(line)) for _, line in lines]
    touches = [
        holds or says_what_is_asked(question, line, words=1) for holds, (_, line) in zip(holds_name, lines, strict=True)
    ]
    subject = subject_stems(question)
    mentions = [
        touched or bool(subject & content_stems(line)) for touched, (_, line) in zip(touches, lines, strict=True)
    ]
    kept: list[bool] = []
    for index, (day, line) in enumerate(lines):
        about = holds_name[index] or (
            touches[index] and (words == 1 or says_what_is_asked(question, line, words=words))
        )
        follows = index > 0 and kept[index - 1] and mentions[index - 1] and _replies(lines[index - 1], (day, line))
        kept.append(about or follows)
    return [pair for pair, keep in zip(lines, kept, strict=True) if keep] or lines


def supporting_lines(question: str, notes: str, *, with_days: bool = True, words: int = 1) -> list[str]:
    """The lines_about `question` that can support an answer to it, so an answer only other lines hold is "I don't
    know": none sharing with it only a word many notes hold ("the staff room code", asked "the code for the safe"),
    none about the speaker's own things when it asks about another person's ("my locker", asked "Grace's locker
    code"), none without the name of a person it names by title ("Doctor Bello"), and no clause about the other side
    of a thing it names by its side ("back door", asked "front door"; this_side_of)."""
    return _this_sides(question, supporting_dated_lines(question, notes, words), with_days)


def supporting_dated_lines(question: str, notes: str, words: int = 1) -> list[tuple[str, str]]:
    """The (day, line) pairs of lines_about that supporting_lines keeps, before this_side_of cuts their clauses;
    judged without the day, which would hide a line's speaker."""
    asker = asker_of(notes)
    titled = titled_names(question)
    subject = subject_stems(question)
    telling = subject - _GENERIC_STEMS
    named = names_given(question, [line for _, line in dated_note_lines(notes)])
    kept: list[tuple[str, str]] = []
    for day, line in _dated_lines_about(question, notes, words):
        held = subject & content_stems(line)
        if telling and held and held <= _GENERIC_STEMS and not named & held_words(line):
            continue  # "the staff room code is 4817" says nothing of "the code for the safe"
        if speaks_of_own_things(question, line, asker) or (titled and not titled & held_words(line)):
            continue
        kept.append((day, line))
    return kept


def _this_sides(question: str, lines: list[tuple[str, str]], with_days: bool) -> list[str]:
    cut = (this_side_of(question, _with_day(day, line, with_days)) for day, line in lines)
    return [line for line in cut if line]


def this_side_of(question: str, line: str) -> str:
    """`line` without its clauses about the other side of a thing the question names by its side: "the staff room
    downstairs is 4817 and the upstairs room is 2590", asked about upstairs, keeps "the upstairs room is 2590". A
    clause naming no side is about the side the clause before it named ("The outdoor pool is up to 26 degrees, the
    new blanket's working. Chlorine out there is 2.6."); empty when no clause is left."""
    asked, said = _sides(question), _sides(line)
    if not any(side[0] == other[0] and side != other for side in asked for other in said):
        return line
    kept: list[str] = []
    other_side = False
    for clause in _CLAUSE_BREAK.split(line):
        if _sides(clause):
            other_side = names_the_other_side(question, clause)
        if not other_side:
            kept.append(clause)
    return " ".join(kept)


def titled_names(question: str) -> frozenset[str]:
    """The names `question` gives after a title, as bare_token writes them: "with Doctor Bello" -> bello."""
    tokens = word_tokens(question)
    return frozenset(
        bare_token(name)
        for title, name in pairwise(tokens)
        if title[:1].isupper() and bare_token(title) in TITLES and name[:1].isupper()
    )


def possessors(question: str) -> frozenset[str]:
    """The people whose thing `question` asks about, as bare_token writes them: "What's Grace's locker code?" -> grace;
    not its first word ("What's")."""
    return (
        frozenset(
            bare_token(word) for word in word_tokens(question)[1:] if word[:1].isupper() and re.search(r"['’]s$", word)
        )
        - WEEKDAYS
        - MONTHS
    )


def speaks_of_own_things(question: str, line: str, asker: str | None) -> bool:
    """True when `line` speaks of its speaker's own things ("Mei: My credit card is in the locker, the PIN is
    4408") and `question` asks about another person's ("What's Grace's locker code?"), whom the line does not
    name. A line without a speaker is the asker's own. A line about the speaker's relative ("My daughter's teacher
    is Mrs Lin") may be about the person asked of ("Lily's teacher") under another name: it is left alone."""
    owners = possessors(question)
    said = spoken_text(line)
    spoken = {bare_token(word) for word in word_tokens(said)}
    if not owners or not spoken & {"my", "mine"} or _MY_RELATIVE.search(said):
        return False
    speaker = speaker_match(line)
    owner = speaker.group("name") if speaker else asker
    if owner is not None and {bare_token(word) for word in word_tokens(owner)} & owners:
        return False
    return not owners & held_words(line)


def names_the_other_side(question: str, line: str) -> bool:
    """True when `line` names only the other side of a thing the question names by its side: "the back door code
    is 4719" is not about "What's the code for the front door?", the over-65s' flu clinic not about the
    under-65s'."""
    asked, said = _sides(question), _sides(line)
    return any(
        asked_side[0] == said_side[0] and asked_side != said_side and asked_side not in said
        for asked_side in asked
        for said_side in said
    )


def _sides(text: str) -> set[tuple[str, str]]:
    """The sides `text` names, each with what it is a side of: "front" is ("front back", "front"), the age band
    "under-65s" is ("65", "under")."""
    words = {bare_token(word) for word in word_tokens(text)}
    named = {(pair, side) for pair, sides in _SIDES.items() for side in sides & words}
    return named | {(age, side.lower()) for side, age in _AGE_BAND.findall(text)}


def _replies(said: tuple[str, str], reply: tuple[str, str]) -> bool:
    """True when `reply` answers `said` in a conversation: the same day, both spoken lines of the person's own
    notes (not another author's labelled note), by two different speakers."""
    return not _LABELLED.match(said[1]) and not _LABELLED.match(reply[1]) and _answers(said, reply)


def unsupported_words(question: str, answer: str, notes: str) -> frozenset[str]:
    """The typed words of `answer` (see the module's docstring) that neither `question` nor the notes about it
    hold; empty for "I don't know", a yes/no or either/or answer and an answer given without notes."""
    if says_unknown(answer) or asks_yes_or_no(question) or offers_a_choice(question):
        return frozenset()
    lines = [line for _, line in dated_note_lines(notes)]
    if not lines:
        return frozenset()
    names = note_names(lines)
    named = typed_words(answer, names) - held_words(question)
    if _ASKS_HOW_OFTEN.search(question):
        named |= {bare_token(token) for token in word_tokens(answer)} & _HOW_OFTEN_WORDS
    asks_who = bool(_ASKS_WHO.match(question))
    nowhere = _named_nowhere(question, answer, lines) if asks_who else frozenset()
    if asks_who and not named:
        return nowhere | _only_the_asked_person(question, answer, names)
    if not named:
        return nowhere
    supporting = supporting_dated_lines(question, notes, words=2 if asks_who else 1)
    about = _this_sides(question, supporting, with_days=not asks_when_it_is(question))
    said = " ".join(about)
    # a date's weekday is held with it: "Tuesday 17 November" from "on the 17th (17 November 2026)"
    unheld = named - held_words(said) - {WEEKDAY_ORDER[day.weekday()] for day in days_with_year(said)}
    if asks_who:
        sides = _this_sides(question, supporting, with_days=False)
        unheld |= (named & names) - said_in(sides)
        unheld |= (named & names) & only_done_to(question, sides)
        unheld |= (named & names) - _held_beside_a_telling_word(question, supporting)
        beside_verb = _said_beside_the_asked_verb(question, sides)
        if beside_verb is not None:
            unheld |= (named & names) - beside_verb
    return unheld | nowhere


def _said_beside_the_asked_verb(question: str, lines: Iterable[str]) -> frozenset[str] | None:
    """The words said (said_in) by the sentences of `lines` telling someone or something does the verb the
    who-`question` asks about, or one meaning it (after "is", "will", "I'll" ...), less the person it is done for:
    "A new admission is coming into bed 2 tonight" names no one for "Who is coming into bed 2 tonight?", whoever
    "Dev went home at 2" names, and "Wei will cover Thursday morning for Omar" names Wei, not Omar; None when no
    sentence tells it so (the notes say it otherwise: "Camp drop-off is Monday")."""
    verbs = asked_verbs(question)
    if not verbs:
        return None
    said: set[str] = set()
    for line in lines:
        speaker = speaker_match(line)
        for sentence in SENTENCE_OR_SEMICOLON_BREAK.split(spoken_text(line)):
            tokens = [token.lower() for token in word_tokens(sentence)]
            tells = any(
                porter_stem(bare_token(token)) in verbs and any(_AUXILIARY.match(before) for before in tokens[:index])
                for index, token in enumerate(tokens)
            )
            if tells and not sentence.rstrip().endswith("?"):
                doing = _DONE_FOR.sub(" ", sentence)
                said |= said_in([f"{speaker.group('name')}: {doing}" if speaker else doing])
    return frozenset(said) if said else None


def _held_beside_a_telling_word(question: str, lines: list[tuple[str, str]]) -> frozenset[str]:
    """The words the (day, line) `lines` holding a telling word of the who-`question`
    (kiosk.llm.answer_form.telling_words) or a weekday or month it names hold; every word of them when it has none.
    A line about the person the question names that says nothing of what it asks ("Ania, can you get more
    thickener?" for "Who is coming to see Stan on Sunday?") names no one for it; a reply to one holding it, said the
    same day by someone else ("It was Matt Patterson"), may, and so may the reply to that reply ("I'm off to Ireland
    for a semester" / "Where are you going to stay?" / "In Galway")."""
    telling = telling_words(question) | {porter_stem(day) for day in held_words(question) & (WEEKDAYS | MONTHS)}
    kept: list[str] = []
    previous: tuple[str, str] | None = None  # the last line kept, while replies to it may still follow
    replies = 0
    for day, line in lines:
        side = this_side_of(question, line)
        holds = bool(side) and (not telling or bool(telling & content_stems(side)))
        replies = 0 if holds else replies + 1
        if holds or (side and previous is not None and replies <= 2 and _answers(previous, (day, line))):
            kept.append(side)
            previous = (day, line)
        else:
            previous = None
    return held_words(" ".join(kept))


def _answers(said: tuple[str, str], reply: tuple[str, str]) -> bool:
    """True when `reply` can answer `said`: the same day, by another author (a speaker or a labelled note's)."""
    first, second = _author(said[1]), _author(reply[1])
    return said[0] == reply[0] and first is not None and second is not None and first != second


def _author(line: str) -> str | None:
    labelled = LABEL_AUTHOR.search(line) if _LABELLED.match(line) else None
    if labelled:
        return labelled.group("name").lower()
    speaker = speaker_match(line)
    return speaker.group("name").lower() if speaker else None


def _only_the_asked_person(question: str, answer: str, names: frozenset[str]) -> frozenset[str]:
    """The names of a who-question's `answer` when it is nothing but people the question itself names: "Dadi" for
    "Who is taking Dadi to her INR check?" ("Melanie's daughter" names someone else)."""
    words = {bare_token(token) for token in word_tokens(answer)} - {"and", "or"}
    return frozenset(words) if words and words <= names & held_words(question) else frozenset()


def _named_nowhere(question: str, answer: str, lines: list[str]) -> frozenset[str]:
    """The capitalised words of a who-question's `answer` that neither the question nor any note line holds: a
    person the model made up ("Lucia" where the notes say "Mum will take you driving")."""
    held = held_words(" ".join([question, *lines]))
    return frozenset(
        word
        for token in word_tokens(answer)
        if token[:1].isupper() and (word := bare_token(token)) not in held and content_stems(word)
    )


def supported_answer(question: str, answer: str, notes: str) -> str | None:
    """ "I don't know" for an answer naming what the notes about the question do not, or not the kind of answer the
    question asks for (kiosk.llm.answer_kinds); None keeps the answer."""
    if of_another_kind(question, answer) or unsupported_words(question, answer, notes):
        return UNKNOWN_ANSWER
    return None
