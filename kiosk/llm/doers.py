"""Who does what a "who" question asks, as the notes say it (issue #36).

Asked "Who's picking me up from volleyball?", the 0.5B model answered "Lucía" (the asker, whom the note addresses)
although the note says "Carmen will pick you up from volleyball on Wednesdays at 8"; "Who is covering my Friday
night shift?" got "Tom" (the asker) for "Tom, Grace will cover your Friday night shift". The check of names
(kiosk.llm.unsupported) turns such answers into "I don't know"; the notes, though, say who does it in so many words.

A note names the one who does it when a sentence of a line about the question's thing (a word of its subject or a
name it gives, other than the verb and time words; the sentence itself, when one holds it) has the question's verb,
or one said for it ("collect" or "get" for "pick up"; any verb for "doing"), with a doer just before it: a name with
"will", "'ll", "is", "are", "can", "is going to" ("Mia is covering Jack's Saturday shift") or "said she'll" ("Precious
said she'll get Grandad's prescription instead"), or "I"/"we" of the line's speaker ("I'll bring the cake"). A
family word written as a name is one ("Mum will take you driving on Sunday"). A sentence that is a question ("Can
someone drive me to handball?") or a request names no one. The answer is that one person when every such sentence
names the same one ("You" when it is the asker), none of them is about another day than the question's ("Who's
picking me up from soccer today?" on a Friday, against "Hiroshi will pick Kenji up from soccer on Thursdays"), and
no later line of theirs or naming them says someone cannot. Otherwise the notes name no one, and the model's answer
goes on to the other checks.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import date, timedelta

from kiosk.llm.answer_form import FAMILY_WORDS, TIME_WORDS, content_stems, says_unknown, subject_stems, word_set
from kiosk.llm.asked_verb import ASKS_WHO_DOES, verbs_meant
from kiosk.llm.compared_words import WEEKDAYS, held_words
from kiosk.llm.days_named import asked_days, filed_on
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.note_speakers import names_in, note_names, speaker_of_line, spoken_text
from kiosk.llm.past_days import days_with_year
from kiosk.llm.prompts import asker_of
from kiosk.stems import porter_stem

YOU = "You"
# Words of a "who" question that do not say what is done: particles of its verb and when it is.
_NOT_THE_THING = frozenset(porter_stem(word) for word in TIME_WORDS | word_set("up in out down off over back on away"))
# Sentences, and clauses of their own: "Ba is making the spring rolls and David is doing the turkey" says who does
# the turkey in its second clause.
_SENTENCE_BREAK = re.compile(r"(?<=[.;!?])\s+|,\s+|\s+(?:and|but)\s+(?=[A-Z])")
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:['’][A-Za-z]+)?")
_I_DO = re.compile(r"(?:^|\s)(?:I|we)(?:['’]ll|['’]m| will| can| am| are)\s+(?:\w+ly\s+|also\s+)?$", re.IGNORECASE)
_NAME_DOES = re.compile(
    r"(?:^|\s)(?P<name>[A-Z][\w-]*(?:['’][A-Z][\w-]*)?)(?:\s+(?:will|is|are|can|is going to)|['’](?:ll|s)|"
    r"\s+(?:said|says)\s+(?:that\s+)?(?:she|he|they)(?:['’]ll|\s+will|\s+can))\s+(?:\w+ly\s+|also\s+)?$"
)
_BEING = re.compile(r"(?:\bis|\bare|['’]s)\s+(?:\w+ly\s+|also\s+)?$")
_WHOSE_TURN = re.compile(r"^\W*whose\s+turn\s+is\s+it\s+to\s+(?P<rest>.+)", re.IGNORECASE)
_TURN_OF = re.compile(r"(?:^|\s)(?P<name>[A-Z][\w-]*['’]s|[Mm]y)\s+turn\b")
_A_WEEK = timedelta(days=7)
_CANNOT = re.compile(r"\b(?:can(?:no|['’])t|won['’]t|isn['’]t|not able|unable)\b", re.IGNORECASE)


def _doer_in(sentence: str, verbs: frozenset[str] | None, speaker: str | None) -> str | None:
    """The one `sentence` says does one of `verbs` (Porter stems; None for any verb): the name just before it with
    "will", "is", "can" ..., or the line's `speaker` for "I'll", "I'm", "we will" ..., or for their own name just
    before its plain form (the prompt writes a shared note's "I collect him" as "Karim collect him"); None when it
    names no one. Any verb is one after "will", "can" or "is going to", or a verb in -ing: not "the Fitbit is
    hers"."""
    for word in _WORD.finditer(sentence):
        said = word.group().lower()
        if verbs is not None and porter_stem(said) not in verbs:
            continue
        before = sentence[: word.start()]
        if _I_DO.search(before):
            return speaker
        named = _NAME_DOES.search(before)
        if named and (verbs is not None or said.endswith("ing") or not _BEING.search(named.group())):
            return named.group("name")
        if verbs and speaker and porter_stem(said) == said and re.search(rf"(?:^|\s){re.escape(speaker)}\s+$", before):
            return speaker
    return None


def _on_another_day(sentence: str, dates: frozenset[date], weekdays: frozenset[str]) -> bool:
    """True when `sentence` is about another day than the question's: another date, or only other weekdays."""
    said_dates = set(days_with_year(sentence))
    if said_dates and dates:
        return not said_dates & dates
    said_weekdays = held_words(sentence) & WEEKDAYS
    return bool(said_weekdays and weekdays) and not said_weekdays & weekdays


def doer_named(question: str, notes: str, asked_on: date | None = None, people: Collection[str] = ()) -> str | None:
    """The one person the notes say does what `question` asks who does (see the module's docstring), as written
    there, or YOU when it is the asker; None when they name no one or several. `people` are the names the terminal
    knows, besides the notes' speakers, authors and names."""
    asks = ASKS_WHO_DOES.match(question)
    if asks is None:
        return _whose_turn(question, notes, asked_on)
    verb = porter_stem(asks.group("verb").lower())
    verbs = verbs_meant(verb)
    thing = (subject_stems(question) | {porter_stem(name) for name in names_in(question)}) - {verb} - _NOT_THE_THING
    if not thing:
        return None
    lines = dated_note_lines(notes)
    known = note_names(line for _, line in lines) | {name.lower() for name in people} | FAMILY_WORDS
    asker = asker_of(notes)
    dates, weekdays = asked_days(question, asked_on)
    in_its_sentence: dict[str, int] = {}
    in_its_line: dict[str, int] = {}
    for index, (_, line) in enumerate(lines):
        said = spoken_text(line)
        if not thing & _stems(said):
            continue
        speaker = speaker_of_line(line) or asker
        for sentence in _SENTENCE_BREAK.split(said):
            doer = None if sentence.rstrip().endswith("?") else _doer_in(sentence, verbs, speaker)
            if doer is None or doer.lower() not in known or _on_another_day(sentence, dates, weekdays):
                continue
            if thing & _stems(sentence):
                in_its_sentence[doer] = index
            elif verbs is not None:
                in_its_line[doer] = index
    named = in_its_sentence or in_its_line
    if len(named) != 1:
        return None
    ((doer, last),) = named.items()
    if says_they_cannot(doer, [line for _, line in lines[last + 1 :]]):
        return None
    return YOU if asker is not None and doer.lower() == asker.lower() else doer


def _whose_turn(question: str, notes: str, asked_on: date | None) -> str | None:
    """For "Whose turn is it to take the bins out this week?": the one the last sentence of the past week about it
    says it is the turn of ("Sami's turn to take the bins out this week"; "my turn" is the speaker's), YOU for the
    asker; None without such a sentence or the day the question is asked (turns go round)."""
    asks = _WHOSE_TURN.match(question)
    if asks is None or asked_on is None:
        return None
    thing = subject_stems(asks.group("rest")) - _NOT_THE_THING
    asker = asker_of(notes)
    doer = None
    for day, line in dated_note_lines(notes):
        filed = filed_on(day)
        said = spoken_text(line)
        if filed is None or not timedelta(0) <= asked_on - filed < _A_WEEK or not thing & _stems(said):
            continue
        for sentence in _SENTENCE_BREAK.split(said):
            turn = _TURN_OF.search(sentence)
            if turn and thing & _stems(sentence):
                named = re.sub(r"['’]s$", "", turn.group("name"))
                doer = (speaker_of_line(line) or asker) if named.lower() == "my" else named
    if doer is None:
        return None
    return YOU if asker is not None and doer.lower() == asker.lower() else doer


def _stems(text: str) -> frozenset[str]:
    return content_stems(text) | frozenset(porter_stem(word) for word in held_words(text))


def says_they_cannot(person: str, later: list[str]) -> bool:
    """True when a line of `later` spoken by or naming `person` says someone cannot ("Mum, I can't do Friday")."""
    for line in later:
        speaker = speaker_of_line(line)
        by_them = speaker is not None and speaker.lower() == person.lower()
        if (by_them or person.lower() in held_words(spoken_text(line))) and _CANNOT.search(spoken_text(line)):
            return True
    return False


def notes_doer(
    question: str, answer: str, notes: str, asked_on: date | None = None, people: Collection[str] = ()
) -> str | None:
    """The doer the notes name (doer_named) in place of an answer that does not name them ("I don't know",
    another person); None keeps the answer."""
    doer = doer_named(question, notes, asked_on, people)
    if doer is None:
        return None
    if not says_unknown(answer) and (doer.lower() in held_words(answer) or (doer == YOU and _names_you(answer))):
        return None
    return doer


def _names_you(answer: str) -> bool:
    return bool(held_words(answer) & {"you", "i", "me"})
