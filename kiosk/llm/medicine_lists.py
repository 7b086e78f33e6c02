"""The other medicines a note names beside the one the answer gives, for a question asking for several.

Asked "What did the doctor give me for my chest?", the 0.5B model answers "prednisolone" from the note "The doctor
gave me prednisolone for the chest, 40 milligrams every morning for five days with breakfast, and amoxicillin 500
three times a day for the infection": it names the first medicine of a list and stops. On the household
development and test sets that was the commonest way a medicine list went wrong, most often with both medicines in
one sentence of one note, else each in a note of the asker's own. Unlike the model's own list completion
(kiosk.llm.lists, which invents), this step adds only what that sentence states beside the answered medicine, and
only where nothing there says it is not taken:
- the question asks for several medicines ("Which tablets am I on now?", "What medicines did urgent care give
  Yuna?") or what someone gave or prescribed ("What did Doctor Bello give me for my chest?");
- an added medicine stands in the same sentence of a note line as a medicine the answer names, in a part of it
  (between commas, "and", "but", "then") that negates nothing and names no change ("no aspirin with it",
  "stopped", "off", "instead");
- no note line names it beside a word of stopping ("The doctor has taken him off the amlodipine"): a medicine
  stopped is the harmful answer;
- asked about a time of day ("in the morning", "at night"), its part names that time ("bisoprolol in the morning
  and the furosemide at lunchtime" adds nothing to "furosemide" for the morning), or the sentence says "both" or
  "all" at that time ("lisinopril 10 mg and a vitamin D tablet, both in the morning");
- its part names no household member the answered medicine's part does not ("warfarin for Mum and metformin for
  Dad").
Asked in the first person what they take ("Which tablets am I on now?", not "for my blood pressure"), the asker's
own note lines that say they take a medicine from day to day ("I take warfarin 5 mg in the evening", "The doctor
added atorvastatin") add theirs too, under the same conditions; a course ("three times a day for five days") or a
one-off ("I took ibuprofen for my headache") does not. The medicine is added as the note says it, with the form
word after it ("salbutamol inhaler").
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import ASKS_OF_ME, FAMILY_WORDS, says_unknown, word_set
from kiosk.llm.medicine_names import medicine_words
from kiosk.llm.note_lines import note_lines
from kiosk.llm.note_speakers import note_people, speaker_of_line, spoken_text
from kiosk.llm.prompts import LABEL_AUTHOR, asker_of
from kiosk.llm.question_lines import SENTENCE_BREAK
from kiosk.stems import porter_stem

_SEVERAL_MEDICINES = re.compile(r"\b(?:medicines|medications|meds|tablets|pills|drugs|prescriptions)\b", re.IGNORECASE)
_GIVEN = re.compile(r"^\W*what\s+(?:did|has|have)\s+.{1,40}?\b(?:give|given|prescribe|prescribed)\b", re.IGNORECASE)
# "Which tablets am I on now?", "What medicines am I taking?", "What do I take every day?"
_ASKS_WHAT_I_TAKE = re.compile(
    r"^\W*(?:what|which)\b.*\b(?:am\s+i\s+(?:on|taking)|do\s+i\s+(?:take|have))\b", re.IGNORECASE
)
_FOR = re.compile(r"\bfor\s+(?:my|the|his|her)\b", re.IGNORECASE)  # "for my blood pressure": a purpose asked
_REGULAR = re.compile(
    r"\b(?:i\s+take|i['’]m\s+on|i\s+am\s+on|i['’]m\s+starting|started|added|put\s+me\s+on|every\s+(?:day|morning|"
    r"evening|night)|once\s+a\s+day|twice\s+a\s+day|daily|my\s+(?:tablets|pills|medicines))\b",
    re.IGNORECASE,
)
_COURSE = re.compile(
    r"\bfor\s+(?:a|one|two|three|four|five|six|seven|eight|nine|ten|fourteen|\d+)\s+(?:more\s+)?(?:days?|weeks?)\b",
    re.IGNORECASE,
)
_PARTS = re.compile(r"[,;:]\s*|\s+(?:and|but|then|plus)\s+", re.IGNORECASE)
_NOT_TAKEN = re.compile(
    r"\b(?:not|never|no|none|nothing|without|avoid\w*|skip\w*|stop\w*|hold|allergic|off|instead|finished|cut|"
    r"cancel\w*|swap\w*|switch\w*|replac\w*|chang\w*|any\s?more|no\s+longer)\b|\b\w+n['’]t\b",
    re.IGNORECASE,
)
_STOPPED = re.compile(
    r"\b(?:stop\w*|off|no\s+more|no\s+longer|any\s?more|finished|cancel\w*|cut\s+out|come\s+off|instead\s+of)\b",
    re.IGNORECASE,
)
_TIMES = word_set("morning breakfast lunchtime lunch afternoon evening dinner tea supper night bedtime")
_FORMS = word_set("inhaler inhalers gel cream drops drop tablet tablets capsule capsules patch patches spray puffer")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_MAX_ANSWER_WORDS = 12


def with_medicines_beside(question: str, answer: str, notes: str) -> str | None:
    """`answer` with the medicines a note sentence names beside one it gives (see the module's docstring); None
    when the question asks for no several medicines, the answer names none, or nothing is to be added."""
    if not (_SEVERAL_MEDICINES.search(question) or _GIVEN.search(question)):
        return None
    if says_unknown(answer) or len(answer.split()) > _MAX_ANSWER_WORDS:
        return None
    answered = {porter_stem(word) for word in medicine_words(answer)}
    if not answered:
        return None
    prompt_lines = [line.text for line in note_lines(notes)]
    lines = [spoken_text(line) for line in prompt_lines]
    people = note_people(prompt_lines)
    stopped = {porter_stem(word) for line in lines if _STOPPED.search(line) for word in medicine_words(line)}
    time = next((word for word in sorted(_TIMES) if re.search(rf"\b{word}\b", question, re.IGNORECASE)), None)
    found = [
        name
        for line in lines
        for sentence in SENTENCE_BREAK.split(line)
        for name in _beside(sentence, answered, time, people)
    ]
    if _ASKS_WHAT_I_TAKE.search(question) and ASKS_OF_ME.search(question) and not _FOR.search(question):
        found += _taken_regularly(notes, time, people)
    added: list[str] = []
    for name in found:
        stem = _stem_of(name)
        if stem not in stopped and stem not in answered and all(stem != _stem_of(item) for item in added):
            added.append(name)
    if not added:
        return None
    return ", ".join([answer.strip().rstrip(".!"), *added])


def _beside(sentence: str, answered: set[str], time: str | None, people: frozenset[str]) -> list[str]:
    """The medicines of `sentence` named beside an `answered` one, as the sentence says them."""
    parts = _PARTS.split(sentence)
    holding = [part for part in parts if answered & {porter_stem(word) for word in medicine_words(part)}]
    if not holding:
        return []
    named_there = {person for part in holding for person in _people_in(part, people)}
    return _medicines_of(sentence, [part for part in parts if part not in holding], named_there, time, people)


def _taken_regularly(notes: str, time: str | None, people: frozenset[str]) -> list[str]:
    """The medicines the asker's own note lines say they take from day to day: a line of theirs saying so ("I take",
    "the doctor added", "once a day") that sets no course ("for five days"), in a part naming no one else."""
    asker = asker_of(notes)
    if asker is None:
        return []
    found = []
    for line in note_lines(notes):
        said = spoken_text(line.text)
        if speaker_of_line(line.text) != asker or LABEL_AUTHOR.search(line.text) or _COURSE.search(said):
            continue
        for sentence in SENTENCE_BREAK.split(said):
            if _REGULAR.search(sentence):
                found += _medicines_of(sentence, _PARTS.split(sentence), {asker.lower()}, time, people)
    return found


def _medicines_of(
    sentence: str, parts: list[str], allowed: set[str], time: str | None, people: frozenset[str]
) -> list[str]:
    """The medicines `parts` of `sentence` name as taken: in a part that negates nothing, names no person but the
    `allowed`, and, asked about a `time` of day, names it (or the sentence says "both" or "all" at it)."""
    everyone_at_time = time is not None and re.search(rf"\b(?:both|all)\b[^.]*\b{time}\b", sentence, re.IGNORECASE)
    found = []
    for part in parts:
        if _NOT_TAKEN.search(part) or _people_in(part, people) - allowed:
            continue
        if time is not None and not everyone_at_time and not re.search(rf"\b{time}\b", part, re.IGNORECASE):
            continue
        words = _WORD.findall(part)
        for index, word in enumerate(words):
            if word.lower() in medicine_words(word):
                form = words[index + 1] if index + 1 < len(words) and words[index + 1].lower() in _FORMS else ""
                found.append(f"{word} {form}".strip())
    return found


def _people_in(part: str, people: frozenset[str]) -> set[str]:
    """The people `part` names, lower-cased: speakers of the notes, family words ("Mum", "Dad") and capitalised
    words after its first that name no medicine ("Femi")."""
    words = _WORD.findall(part)
    capitalised = {
        word.lower()
        for word in words[1:]
        if word[0].isupper() and not medicine_words(word) and not ASKS_OF_ME.fullmatch(word)
    }
    return {word.lower() for word in words if word.lower() in people | FAMILY_WORDS} | capitalised


def _stem_of(item: str) -> str:
    return porter_stem(item.split()[0].lower())
