"""An answer copied from a note that a later note changed is answered again without the earlier note (issue #36).

People correct what they told the terminal: "Remember I've got the dentist next Tuesday at 3", and a week later
"Actually the dentist moved to Friday, same time". Reading both, the 0.5B model often answers from the first: a
moved appointment's old day, a dose the doctor has since cut, a door code that was changed. Those are the largest
class of harmful answers on the household set. Marking such notes when they are stored needs to know which earlier
note a correction is about; a rule guessing it from two shared words marked about half of its pairs wrongly,
an allergy note among them: unsafe on a medication path.

This step looks at one answer instead, with the question telling what the notes are about. It acts only when all of:
- the answer names a day or a number (kiosk.llm.compared_words.typed_words: a time, date, amount or dose) that the
  question does not. Not a name: which note a "who" answer came from is too loose a guess (a question's subject
  words such as "off" or "visitor" are in many notes);
- one earlier note line about what is asked holds every such word;
- a later line holds every word of the question's subject the earlier one holds, or only some of them and no
  other, saying outright that it corrects ("actually", "moved") and sharing another word with the earlier line
  (the same thing, referred back to: "the pharmacy moved our shots" after "flu shot ... at the pharmacy"; not
  another appointment, nor "the server room alarm code" after "the back door code"), names another word of the
  same kind (another day or number) and not the answer's, but as what a change was from ("up from 10 to 12
  units"), and says that something changed ("actually", "moved", "changed", "instead", "now", "from Monday",
  "up from", "starting tonight", ...). Without such words a later note is another event, not a correction:
  "When did I last see the dentist?" has several right answers over time.
Then the model is asked again with the earlier lines about it left out, and its new answer is shown. It never
invents: the second answer is the model's own, read from the notes that are still true.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kiosk.llm.answer_form import content_stems, says_unknown, subject_stems
from kiosk.llm.compared_words import MONTHS, WEEKDAYS, held_words, typed_words
from kiosk.llm.note_lines import NoteLine, note_lines
from kiosk.llm.note_speakers import names_given, note_names, spoken_text
from kiosk.llm.time_anchors import ANCHOR
from kiosk.stems import porter_stem

# Words that say a note changes what an earlier one said: those of the household set's development notes ("actually",
# "moved", "changes to 6140 from Monday", ...) and their common forms and synonyms ("postponed", "from tonight").
# "Up"/"down" only before an amount ("up from 10 to 12 units"): not "pick Tobi up from soccer", "drive up to Uppsala".
CHANGE = re.compile(
    r"\b(?:change\s+of\s+plan|actually|moved?|moving|changed?|changes|instead|now|no\s+longer|any\s?more|"
    r"cancel(?:l)?ed|rearranged|postponed|brought\s+forward|put\s+back|(?:up|down)\s+(?:to|from)(?=\s+\d)|"
    r"starting\s+(?:today|tonight|tomorrow)|"
    r"from\s+(?:today|tonight|tomorrow|now\s+on|next\s+\w+|the\s+\d+\w*|(?:mon|tues|wednes|thurs|fri|satur|sun)day))\b",
    re.IGNORECASE,
)


# The words of CHANGE that say outright that something told before was corrected.
_CORRECTION = re.compile(
    r"\b(?:actually|moved|moving|changed|instead|cancel(?:l)?ed|postponed|rearranged|change\s+of\s+plan|"
    r"brought\s+forward|put\s+back)\b",
    re.IGNORECASE,
)
_MONTH_STEMS = frozenset(porter_stem(month) for month in MONTHS)


_NEGATED = re.compile(r"(?:not|never|cannot|\w+n['’]t)\W*$", re.IGNORECASE)


def words_after_change(line: str) -> list[str]:
    """The words of the clause after a line's first change word (CHANGE), without those named as what it changed
    from ("moved from Wednesday to Thursday" -> to, Thursday); empty without a change word. The clause ends at the
    first comma or full stop after a word of it: "up to 20 units from tonight, my morning sugars are too high" says
    nothing changed to the morning; "Change of plan, we drive on Friday" changes to Friday. A clause that negates
    says what no longer holds, so the next clause is read too: "Change of plan, the plumber can't make it tomorrow,
    he's coming Thursday the 5th instead" changes to Thursday."""
    change = CHANGE.search(line)
    words: list[str] = []
    clause_start = 0
    for word in line[change.end() :].split() if change else []:
        if word.strip(",.;:!?"):
            words.append(word)
        if len(words) > clause_start and word.endswith((",", ".", ";", "!", "?")):
            if not any(_NEGATED.match(said) for said in words[clause_start:]):
                break
            clause_start = len(words)  # "can't make it tomorrow," says what no longer holds: read on
    return [word for index, word in enumerate(words) if not (index and words[index - 1].lower() == "from")]


# A change a line states with both ends: "put her Lantus up from 10 to 12 units" says 10 no longer holds;
# "moved from Wednesday to Thursday".
FROM_TO = re.compile(r"\bfrom\s+(?P<old>[\w:.]+)\s+to\s+(?P<new>[\w:.]+)(?:\s+(?P<unit>[A-Za-z]+))?", re.IGNORECASE)


def _kind(word: str) -> str:
    if word[:1].isdigit():
        return "number"
    return "day" if word in WEEKDAYS or word in MONTHS else "name"


def superseded_lines(question: str, answer: str, notes: str) -> list[str]:
    """The earlier note lines `answer` was copied from and a later line changed (see the module's docstring); empty
    when the answer is not such a copy."""
    if says_unknown(answer):
        return []
    lines = note_lines(notes)
    if len(lines) < 2:
        return []
    names = note_names(line.text for line in lines)
    named = frozenset(word for word in typed_words(answer, names) - held_words(question) if _kind(word) != "name")
    if not named:
        return []
    kinds = {_kind(word) for word in named}
    subject = _subject(question, [line.text for line in lines])
    about = {line: subject & _stems(line.text) for line in lines}
    earlier = [line for line in lines if about[line] and named <= held_words(line.text)]
    changed: list[str] = []
    for old in earlier:
        if any(_changes(new, old, about, subject, named, kinds, names) for new in lines):
            changed.append(old.text)
    return changed


def _changes(
    new: NoteLine,
    old: NoteLine,
    about: dict[NoteLine, frozenset[str]],
    subject: frozenset[str],
    named: frozenset[str],
    kinds: set[str],
    names: frozenset[str],
) -> bool:
    if not old.before(new) or not _same_thing(old, new, about, subject, names):
        return False
    if named <= held_words(_without_what_changed(new.text)):
        return False
    others = typed_words(new.text, names) - named
    return any(_kind(word) in kinds for word in others) and bool(CHANGE.search(new.text))


def _without_what_changed(text: str) -> str:
    """`text` without what its changes were from: "up from 10 to 12 units" -> "up to 12 units"."""
    return FROM_TO.sub(lambda change: " " + change.group(0)[change.end("old") - change.start() :].lstrip(), text)


def _same_thing(
    old: NoteLine, new: NoteLine, about: dict[NoteLine, frozenset[str]], subject: frozenset[str], names: frozenset[str]
) -> bool:
    """True when the later line `new` speaks of what the earlier `old` does: it holds every word of the question's
    subject `old` holds; or some of them and no other, says outright that something was corrected ("actually",
    "moved", not "I need to make changes") and shares a word with `old` beyond the subject and the names ("the
    pharmacy moved our shots" after "flu shot and COVID booster at the pharmacy"; not "the server room alarm code"
    after "the back door code", nor a chat line to the same friend)."""
    if about[old] <= about[new]:
        return True
    if not about[new] or not about[new] < about[old] or not _CORRECTION.search(new.text):
        return False
    return bool(_words_in_common(old.text, new.text) - subject - {porter_stem(name) for name in names})


def _words_in_common(old: str, new: str) -> frozenset[str]:
    """The content stems both lines say, not numbers nor months (a relative day's date in brackets has those)."""
    said = [content_stems(ANCHOR.sub(" ", spoken_text(line))) for line in (old, new)]
    return frozenset(stem for stem in said[0] & said[1] if not stem[:1].isdigit() and stem not in _MONTH_STEMS)


def _subject(question: str, lines: list[str]) -> frozenset[str]:
    """The stems of what the question asks about, with the names it gives that are not the notes' speakers or
    authors ("INR", "Uppsala"; kiosk.llm.unsupported.names_given)."""
    return subject_stems(question) | {porter_stem(name) for name in names_given(question, lines)}


def _stems(text: str) -> frozenset[str]:
    return frozenset(porter_stem(word.lower()) for word in re.findall(r"[A-Za-z]+", text))


def misleading_lines(question: str, answer: str, notes: str) -> Callable[[str], bool] | None:
    """What to leave out of the notes to ask again (kiosk.llm.note_lines.asked_again_without): the lines
    superseded_lines finds, or None when there are none."""
    stale = frozenset(superseded_lines(question, answer, notes))
    return stale.__contains__ if stale else None
