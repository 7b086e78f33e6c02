"""When something is, as the notes say it (issue #36).

Asked "When is parents' evening?", the 0.5B model answered "The evening before 3 October 2026 is at 7" although the
note says "Parents' evening at school is next Wednesday (21 October 2026) at 7"; asked "When's my knee appointment
now?", it gave the day a note was filed under. The checks turn such answers into "I don't know" (kiosk.llm.unsupported,
kiosk.llm.filing_days); the notes, though, say the day in so many words. And where the model found the day, it often
left out the time the same sentence gives ("30 October 2026" for an echo scan "tomorrow (30 October 2026) at 10:30").

A sentence of the notes tells when the question's thing is when it holds every word of the question's subject (not
its time words nor common verbs) or, where no sentence does, some of them in a line holding them all ("Legs a bit
better. Moira will be back next Wednesday (11 November 2026) to check them."), asks nothing, and names one day: a
date ("Wednesday (21 October 2026)", "Sunday 15 November"), no other day, and at most one time of day ("at 7", "at
half nine", "still at 9"); of a sentence naming several, its one clause about the thing ("moved Gogo's eye
appointment to Thursday the 12th at 11" of "..., they cancelled Wednesday the 11th"), when no other clause naming a
day holds a word of the question. When such sentences name one day, or the last of them says it changed ("moved to
Thursday the 26th", "same time" keeping the time said before), and no later line says something about it changed (a
word of the thing, a name the question gives, or that weekday or date, with "moved", "instead", "change of plan"
...), that day is the answer, with its weekday and time: "Wednesday 21 October at 7" ("At 7" when the question asks
only what time). Never a day already past on the day the question is asked, nor another day than the one it asks
about ("tomorrow", a weekday); so nothing is said without the day the question is asked (a replay such as LoCoMo's).
It replaces an answer naming another day or none, and completes one naming only that day without a time (unless the
notes give no time and the answer says more than its day: "Sunday 15 November, 11 till 2").
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from kiosk.llm.answer_form import TIME_WORDS, asks_when_it_is, content_stems, subject_stems, word_set
from kiosk.llm.compared_words import DAY_NAME_STEMS, WEEKDAYS, held_words
from kiosk.llm.grounding import dated_note_lines
from kiosk.llm.note_lines import filing_day
from kiosk.llm.note_speakers import names_in, spoken_text
from kiosk.llm.past_days import days_with_year
from kiosk.llm.question_lines import CLAUSE_BREAK, SENTENCE_OR_SEMICOLON_BREAK
from kiosk.llm.superseded import CHANGE
from kiosk.llm.time_anchors import ANCHOR
from kiosk.local_time import DAY_OF_MONTH, MONTH_NAMES, days_of_month
from kiosk.local_time import WEEKDAYS as WEEKDAY_ORDER
from kiosk.stems import porter_stem

# Words of a "when" question that do not say what it is about.
_NOT_THE_THING = frozenset(
    porter_stem(word)
    for word in TIME_WORDS
    | word_set(
        "up in out down off over back on away date go going get getting come coming make have has am is are due start"
    )
)
_HOUR = r"(?:\d{1,2}(?:[:.]\d{2})?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|midday)"
_BEFORE_HOUR = r"(?:(?:half|quarter|five|ten|twenty|twenty-five)\s+(?:past|to)\s+|half\s+)?"
_CLOCK = re.compile(
    rf"\bat\s+{_BEFORE_HOUR}{_HOUR}\b(?:\s?(?:am|pm|a\.m\.|p\.m\.|o['’]clock))?|\b\d{{1,2}}[:.]\d{{2}}\b"
    rf"(?:\s?(?:am|pm))?|\b\d{{1,2}}\s?(?:am|pm)\b",
    re.IGNORECASE,
)
_MONTH_OF = dict(enumerate(MONTH_NAMES, start=1))
_TIME_STEMS = frozenset(porter_stem(word) for word in TIME_WORDS)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_DAY_STEMS = DAY_NAME_STEMS | {porter_stem(word) for word in ("the", "on", "of")}
# What a deadline is asked with rather than what it is for: "When do I have to hand in the Swedish essay?" is about
# the essay a note says is "due next Monday".
_HANDING_IN = re.compile(r"\b(?:hand(?:ed)?|turn(?:ed)?|give|given|handing)\s+(?:it\s+|them\s+)?in\b", re.IGNORECASE)
# A day said only as the one something moved away from is not its day: "The dentist moved me from Thursday (22
# October 2026), they'll ring with a new day" (with a day it moved to, the sentence names two and says nothing).
_MOVED_FROM = re.compile(
    r"\b(?:moved|moving|changed|cancel(?:l)?ed|postponed|put\s+back)\b[^.]*\bfrom\s+(?:the\s+)?"
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d{1,2}(?:st|nd|rd|th)?)\b",
    re.IGNORECASE,
)
_SAME_TIME = re.compile(r"\bsame\s+time\b", re.IGNORECASE)
_ASKS_TIME = re.compile(r"^\s*what\s+time\b", re.IGNORECASE)
_TODAY = re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.IGNORECASE)
_TOMORROW = re.compile(r"\btomorrow\b", re.IGNORECASE)


def _days_in(sentence: str, filed: date | None) -> set[date]:
    """The days `sentence` names: with their year, or with their month on or after the day it was `filed`."""
    days = set(days_with_year(sentence))
    if days or filed is None:
        return days
    for day, month in days_of_month(sentence):
        if month is None:
            continue
        try:
            named = date(filed.year, MONTH_NAMES.index(month) + 1, day)
            days.add(named if named >= filed else named.replace(year=filed.year + 1))
        except ValueError:
            continue
    return days


def _clocks_in(sentence: str) -> list[str]:
    return list(dict.fromkeys(match.group().strip() for match in _CLOCK.finditer(sentence)))


def filed_on(day_header: str) -> date | None:
    """The day a note line is filed under, from its day header as dated_note_lines gives it ("Saturday 12 September
    2026"); None without one."""
    return filing_day(day_header.split(" ", 1)[-1]) if day_header else None


def _as_said(day: date, clock: str | None) -> str:
    said = f"{WEEKDAY_ORDER[day.weekday()].capitalize()} {day.day} {MONTH_NAMES[day.month - 1].capitalize()}"
    if clock is None:
        return said
    return f"{said} {clock}" if clock.lower().startswith("at ") else f"{said} at {clock}"


def asked_days(question: str, asked_on: date | None) -> tuple[frozenset[date], frozenset[str]]:
    """The days `question` asks about: dates ("today", "tonight", "tomorrow", from the day it is asked) and
    weekdays, named or of those dates."""
    dates: set[date] = set()
    if asked_on is not None:
        if _TODAY.search(question):
            dates.add(asked_on)
        if _TOMORROW.search(question):
            dates.add(asked_on + timedelta(days=1))
    weekdays = (held_words(question) & WEEKDAYS) | {WEEKDAY_ORDER[day.weekday()] for day in dates}
    return frozenset(dates), frozenset(weekdays)


def _asked_day_fits(question: str, day: date, asked_on: date) -> bool:
    """False when `day` is past on the day the question is asked, or not the day it asks about."""
    dates, weekdays = asked_days(question, asked_on)
    if day < asked_on or (dates and day not in dates):
        return False
    return not weekdays or WEEKDAY_ORDER[day.weekday()] in weekdays


def day_named(question: str, notes: str, asked_on: date | None = None) -> tuple[date, str | None] | None:
    """The day (and time of day, as written: "at 9") the notes say the question's thing is (see the module's
    docstring); None when they say none, several without a change, or a later line says something about it
    changed."""
    if asked_on is None or not asks_when_it_is(question):
        return None
    thing = subject_stems(_HANDING_IN.sub(" ", question)) - _NOT_THE_THING
    if not thing:
        return None
    lines = sorted(
        ((filed_on(header) or date.min, line) for header, line in dated_note_lines(notes)), key=lambda pair: pair[0]
    )
    asked = content_stems(question) - _TIME_STEMS
    told = _told(lines, thing, asked, whole_sentence=True)
    if told == []:
        told = _told(lines, thing, asked, whole_sentence=False)
    if not told:
        return None
    index, day, clock, last = told[-1]
    if len({told_day for _, told_day, _, _ in told}) > 1 and not CHANGE.search(last):
        return None
    if _changed_later(question, thing, day, [line for _, line in lines[index + 1 :]]):
        return None
    if clock is None and _SAME_TIME.search(last):
        clock = next((earlier for _, _, earlier, _ in reversed(told[:-1]) if earlier), None)
    return (day, clock) if _asked_day_fits(question, day, asked_on) else None


def _told(
    lines: list[tuple[date, str]], thing: frozenset[str], asked: frozenset[str], *, whole_sentence: bool
) -> list[tuple[int, date, str | None, str]] | None:
    """(line index, day, time of day, sentence) for each sentence of `lines` naming a day that holds every word of
    `thing` (`whole_sentence`), or some of them in a line holding them all; of a sentence naming several days or
    times, its clause about `thing` (_the_clause_telling, `asked` the question's words); None when there is no such
    clause."""
    told: list[tuple[int, date, str | None, str]] = []
    for index, (filed, line) in enumerate(lines):
        said = spoken_text(line)
        if not thing <= content_stems(said):
            continue
        for sentence in SENTENCE_OR_SEMICOLON_BREAK.split(said):
            held = thing & content_stems(sentence)
            if sentence.rstrip().endswith("?") or not held or (whole_sentence and held != thing):
                continue
            on = filed if filed > date.min else None
            if _names_several(sentence, on):
                clause = _the_clause_telling(sentence, thing, asked, on, whole_sentence=whole_sentence)
                if clause is None:
                    return None
                sentence = clause
            days, clocks = _days_in(sentence, on), _clocks_in(sentence)
            if days and not _MOVED_FROM.search(sentence):
                told.append((index, days.pop(), clocks[0] if clocks else None, sentence))
    return told


def _names_several(text: str, filed: date | None) -> bool:
    """True when `text` names more than one day or time of day."""
    days = _days_in(text, filed)
    return len(days) > 1 or len(_clocks_in(text)) > 1 or bool(days and _names_another_day(text, next(iter(days))))


def _the_clause_telling(
    sentence: str, thing: frozenset[str], asked: frozenset[str], filed: date | None, *, whole_sentence: bool
) -> str | None:
    """The one clause of a `sentence` naming several days that is about `thing` (every word of it, or some) and
    names one day: "St John's moved Gogo's eye appointment to Thursday the 12th at 11" of "..., they cancelled
    Wednesday the 11th"; None when no clause or more than one naming a day is about it, it names several, or
    another clause naming a day holds a word `asked` (the question's words: "I need Friday the 23rd off" beside
    "my sister's wedding moved to the 24th", asked which day Ciaran is off for the wedding)."""
    about: list[str] = []
    others: list[str] = []
    for clause in CLAUSE_BREAK.split(sentence):
        if _days_in(clause, filed):
            held = content_stems(clause)
            telling = thing <= held or (not whole_sentence and thing & held)
            (about if telling else others).append(clause)
    if len(about) != 1 or _names_several(about[0], filed) or any(asked & content_stems(other) for other in others):
        return None
    return about[0]


def _changed_later(question: str, thing: frozenset[str], day: date, later: list[str]) -> bool:
    """True when a line of `later` says something changed ("Change of plan, we drive to Uppsala on Friday evening
    instead") and holds a word of the question's `thing` or a name it gives, or says so in a clause naming the
    weekday or date of `day` ("the pharmacy moved it from Tuesday"; not "I can't do Friday, Precious will get it
    instead")."""
    names = names_in(question)
    for line in later:
        said = spoken_text(line)
        if not CHANGE.search(said):
            continue
        if thing & content_stems(said) or names & held_words(said):
            return True
        if any(CHANGE.search(clause) and _names_day(clause, day, once=True) for clause in CLAUSE_BREAK.split(said)):
            return True
    return False


def _names_another_day(sentence: str, day: date) -> bool:
    """True when `sentence` also names a day of the month or a weekday other than `day`'s ("moved to the 24th
    (24 October 2026) from the 16th")."""
    days_of = {said for said, _ in days_of_month(sentence)}
    weekdays = held_words(ANCHOR.sub(" ", sentence)) & WEEKDAYS
    return bool(days_of - {day.day} or weekdays - {WEEKDAY_ORDER[day.weekday()]})


def _names_only(answer: str, day: date) -> bool:
    """True when `answer` names `day` and no other: by its day of the month ("Wednesday the 21st", "21 October
    2026") or, naming none, by its weekday ("Thursday at 3 pm")."""
    named = days_of_month(answer)
    if not named:
        return held_words(ANCHOR.sub(" ", answer)) & WEEKDAYS == {WEEKDAY_ORDER[day.weekday()]}
    return all(said == day.day and month in (None, _MONTH_OF[day.month]) for said, month in named)


def _names_day(text: str, day: date, *, once: bool = False) -> bool:
    """True when `text` names `day` by its date or its weekday; `once`: not by its weekday in the plural, which says
    every such day ("Soccer practice moved to Tuesdays" changes no one Tuesday)."""
    weekday = WEEKDAY_ORDER[day.weekday()]
    named = bool(re.search(rf"\b{weekday}\b(?!s)", text, re.IGNORECASE)) if once else weekday in held_words(text)
    return named or (day.day, _MONTH_OF[day.month]) in days_of_month(text)


def notes_day(question: str, answer: str, notes: str, asked_on: date | None = None) -> str | None:
    """The day the notes name (day_named), with its weekday and time, in place of an answer naming another day,
    none, or only that day without a time (unless the notes give none and the answer says more than its day); for
    "What time ...?", the time alone in place of another. None keeps the answer."""
    named = day_named(question, notes, asked_on)
    if named is None:
        return None
    day, clock = named
    if _ASKS_TIME.match(question):
        if clock is None or [said.lower() for said in _clocks_in(answer)] == [clock.lower()]:
            return None
        return clock[0].upper() + clock[1:]
    if _names_only(answer, day) and (_clocks_in(answer) or (clock is None and _says_more_than_the_day(answer))):
        return None
    return _as_said(day, clock)


def _says_more_than_the_day(answer: str) -> bool:
    """True when `answer` says something besides its day ("Sunday 15 November, 11 till 2", "Friday the 20th,
    afternoon list"): the day the notes name without a time would say less."""
    rest = _YEAR.sub(" ", DAY_OF_MONTH.sub(" ", ANCHOR.sub(" ", answer)))
    return bool(content_stems(rest) - _DAY_STEMS)
