"""Who speaks in a note line and whom its words name (issue #36): the speaker and author of a line, what it says
without them, the names a question or the notes give, and who the lines say does something themselves. Used by the
answer checks (kiosk.llm.unsupported and those built on it)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kiosk.llm.answer_form import content_stems
from kiosk.llm.asked_verb import ASKS_WHO_DOES
from kiosk.llm.compared_words import MONTHS, WEEKDAYS, WORD, bare_token, held_words, word_tokens
from kiosk.llm.prompts import LABEL_AUTHOR, NOTE_SPEAKER
from kiosk.stems import porter_stem

_SENTENCE_START = re.compile(r"(?:^|(?<!\.)[.!?]\s+)\W*$")
_LINE_START_OR_LABEL = re.compile(r"^(?:- )?(?:\([^()]*\)\s*)?")
_I_AS_DOER = frozenset({"i", "i'll", "i’ll", "i'm", "i’m", "we", "we'll", "we’ll"})
_FIRST_PERSON = re.compile(r"i(?:['’][a-z]+)?$")  # "i", "i'm", "i'll" as bare_token writes them
_TOLD_TO = re.compile(r"^\s*[A-Z][\w'’-]*,\s+(?=(?:I|I['’](?:m|ll|ve|d)|we)\b)")
_SPEAKS_OF_ONESELF = re.compile(r"\b(?:I|I['’](?:m|ll|ve|d)|me|my|mine|myself|we|us|our)\b", re.IGNORECASE)
# A note that starts with its verb has its speaker for subject: "Picking Lily up at 3", "Got the tea bags".
_SUBJECTLESS = re.compile(
    r"^\s*(?:\w+ing|got|will|can|took|gave|made|left|went|brought|bought|sent|paid|did|picked|dropped|booked|"
    r"ordered|collected|called|rang|fixed|cleaned|sorted|done)\b",
    re.IGNORECASE,
)


def note_people(lines: Iterable[str]) -> frozenset[str]:
    """The speakers and authors of note lines, lower-cased."""
    people: set[str] = set()
    for line in lines:
        people.update(bare_token(author) for author in LABEL_AUTHOR.findall(line))
        speaker = speaker_match(line)
        if speaker:
            people.update(bare_token(word) for word in word_tokens(speaker.group("name")))
    return frozenset(people)


def speaker_match(line: str) -> re.Match[str] | None:
    """The speaker part ("Carmen:") of a note line, past its author label; None without one."""
    speaker = NOTE_SPEAKER.match(_LINE_START_OR_LABEL.sub("", line))
    return speaker if speaker and all(word[:1].isupper() for word in speaker.group("name").split()) else None


def speaker_of_line(line: str) -> str | None:
    """The name of the speaker of a note line ("Carmen: I'll ..." -> "Carmen"), or None."""
    speaker = speaker_match(line)
    return speaker.group("name") if speaker else None


def spoken_text(line: str) -> str:
    """What a note line says: without its author label and speaker."""
    body = _LINE_START_OR_LABEL.sub("", line)
    speaker = speaker_match(line)
    return body[speaker.end() :] if speaker else body


def note_names(lines: Iterable[str]) -> frozenset[str]:
    """The names in note lines, lower-cased: every speaker and author, and every content word the lines write only
    with a capital ("Rosa", "Harbour", not "Remember" when a line also says "remember"); not weekdays, months nor
    "I"."""
    lines = list(lines)
    capitalised: set[str] = set()
    lower: set[str] = set()
    for line in lines:
        for word in word_tokens(spoken_text(line)):
            (capitalised if word[:1].isupper() else lower).add(bare_token(word))
    names = {word for word in capitalised - lower if content_stems(word)}
    return frozenset(word for word in (names | note_people(lines)) - WEEKDAYS - MONTHS if not _FIRST_PERSON.match(word))


def names_in(question: str) -> frozenset[str]:
    """The names `question` gives, as bare_token writes them: its capitalised words that start no sentence, not
    weekdays, months nor "I", "I'm" ("When are we going to Uppsala for Farmor's birthday?" -> uppsala, farmor; "A
    neighbour brought almond croissants. Can Théo have one?" -> théo)."""
    named = {
        bare_token(match.group())
        for match in WORD.finditer(question)
        if match.group()[:1].isupper() and not _SENTENCE_START.search(question[: match.start()])
    }
    return frozenset(word for word in named - WEEKDAYS - MONTHS if not _FIRST_PERSON.match(word))


def names_given(question: str, lines: Iterable[str]) -> frozenset[str]:
    """The names `question` gives that are no speaker or author of the note `lines`, as bare_token writes them: its
    capitalised words after the first, not weekdays, months nor "I", "I'm" ("Can Doris have amoxicillin?" -> doris)."""
    return names_in(question) - note_people(lines)


def _does_it_themselves(words: list[str], verbs: set[str]) -> bool:
    """True when a speaker's words say "I" do one of `verbs` ("I'll pick Yuna up"), not that it is done to them."""
    return any(
        word in _I_AS_DOER and any(porter_stem(later) in verbs for later in words[index + 1 : index + 3])
        for index, word in enumerate(words)
    )


def only_done_to(question: str, lines: Iterable[str]) -> frozenset[str]:
    """The people a question asking who does something ("Who is picking me up from school today?") finds in `lines`
    only just after its verb, as the one it is done to ("I'll pick Kenji up from soccer"), never as the
    one doing it; empty for a question asking whom something is done to ("Who did Tom visit?")."""
    asks = ASKS_WHO_DOES.match(question)
    if asks is None:
        return frozenset()
    verbs = {porter_stem(asks.group("verb").lower())}
    after_verb: set[str] = set()
    elsewhere: set[str] = set()
    for line in lines:
        words = [bare_token(token) for token in word_tokens(spoken_text(line))]
        speaker = speaker_match(line)
        if speaker and _does_it_themselves(words, verbs):
            elsewhere.update(bare_token(word) for word in word_tokens(speaker.group("name")))
        for index, word in enumerate(words):
            (after_verb if index and porter_stem(words[index - 1]) in verbs else elsewhere).add(word)
    return frozenset(after_verb - elsewhere)


def said_in(lines: Iterable[str]) -> frozenset[str]:
    """The words `lines` say, as held_words gives them: a line's speaker only when they speak of themselves ("Tom: I'll
    bring the cake", "Tom: Picking Lily up at 3"), not when they tell what another does ("Grace: ... Leanne will
    sign for it") nor as the author of a note; nor the person a line is told to when its speaker says what they do
    themselves ("Dan: Bisi, I'll wheel the bins out")."""
    said: set[str] = set()
    for line in lines:
        spoken = _TOLD_TO.sub("", spoken_text(line))
        said |= held_words(spoken)
        speaker = speaker_match(line)
        if speaker and (_SPEAKS_OF_ONESELF.search(spoken) or _SUBJECTLESS.match(spoken)):
            said |= held_words(speaker.group("name"))
    return frozenset(said)
