"""What the notes about a yes/no question answer where they contradict the model's yes or no (kiosk.llm.choices).

- for a weekday, month or number the question names: "yes" when the lines name none of them but another of the
  same kind ("Wednesday" asked, "Tuesday and Thursday" said), or, asked whether it is still so, when a line about
  the question's own thing says it changed to another ("Is hockey still on Tuesdays?": "moved to Wednesdays"), or
  when the last such line moves it away from the one asked ("Is the physio coming on Friday this week?": "moved
  Friday's session to Saturday"); "no" when the lines name each of them and no other of the same kind, and no
  clause of the lines about its own thing negates ("no match this Saturday" leaves "No" to "Is the match still on
  this Saturday?");
- a "yes" a line about the question denies: a word of the question's subject, or a name it gives that is no note's
  speaker, comes just after a denying word ("no aspirin with it", "allergic to latex", "hold tonight's warfarin")
  or just before a word saying it is away ("the lift next to the ward is out until Monday", "Dr Kavanagh is on
  annual leave"). For a word saying it is away the line must also be about the question: hold two of those words
  (all, when there are fewer), or the name it is said of. A question holding such a word itself ("Is the lift
  still out?", "Is Yuna allergic to peanuts?") is not judged this way: there "yes" is the denial. Nor is a
  question about the past ("Did they grow up with a dog?", "Have they been to Rio?"): a note's denial is a standing
  rule or how things are now, and what someone never did once may still have happened (it withdrew three right
  LoCoMo answers). A medicine's family stands for it: "allergic to penicillin" denies "Can Doris have
  amoxicillin?" (kiosk.llm.families);
- "yes" to whether someone is allergic to a thing a line says they are fine with ("Théo is fine with peanuts"); and
  a "no" to it where no line says so: notes tell what someone is allergic to, and their silence on a thing is no
  "no" ("Is Yaw allergic to nuts?" over "Yaw is allergic to egg");
- "yes" to whether someone can have a food or medicine that a sentence of a line about an allergy names, or names
  the family of, without saying it is fine ("It's only tree nuts for him: cashews, almonds" for "A neighbour brought
  almond croissants. Can Théo have one?"), in a line naming the person the question names;
- "yes" to whether the asker is the one to do something ("Am I picking Théo up tomorrow?") when the lines about it
  say one other person does it; a "yes" to whether a person the question names does it when the notes name one
  other doer (kiosk.llm.other_doer) is withdrawn;
- a "no" a line about the question (two of those words) keeps going or starts again: "Keep taking the aspirin 75 mg
  with dinner" for "Do I still take the aspirin?", "Joan's knee went well. Her metformin restarts today" for "Does
  Joan take her metformin this morning?"; and a "no" to whether something is still so when no line holding the
  question's rarest word says it ended, changed or was done ("Is Femi still on the apixaban twice a day?" -> "No",
  the apixaban's two lines unchanged since);
- a "no" where a line says what the question asks in so many words: every telling word, name and day of it, with
  no clause about it negating and no line about it changing ("Has Luca paid the electricity bill?": "Luca: Paid the
  electricity bill tonight");
- a "no" where a line says it is still so in so many words ("Is training still on this week?": "Training is still
  on"), and, for a question naming no one, a "no" where the clauses holding two words of its subject name the
  weekday it asks and no other, none negating or calling it off ("Does the paper recycling go out on Wednesday
  night?": "paper and cardboard go out on Wednesday night, general rubbish every night except Saturday");
- a yes or no to whether something has been done that the notes do not say (kiosk.llm.done_questions: "Is Stan's
  flu shot booked?" / "No" over "Flu shots for both of them on Tuesday the 24th");
- a yes or no when no note line is about the question at all (none holds a word of what it asks, a name it gives, a
  medicine's family or a day it names) is a guess ("Is Claire going for a job interview?" / "Yes"); so is a "yes"
  to a question about now when a telling word of what it asks (not "there", "something", "himself", "twice", nor
  "eat" or "have") is in no line ("Are Pai's ankles swelling again?" over notes on his tablets), once nothing
  above has answered it.

A question told with its situation first ("My knee is aching. Can I take some ibuprofen?") is judged by its last
sentence (its sentence with a question mark, when a situation follows it). An answer made only of the question's
own words says "yes" ("Is the spare key still under the mat?" -> "Under the mat"), or "no" when it negates them
("Nadia is not looking for another job."). Where the model said it does not know, a line about the question's own
thing refusing what it asks ("allergic to shellfish, prawns especially") gives the notes' "No" (denied_outright).

Where they contradict a "yes" the notes answer "No" when a line giving it is about the question's own thing (its
rarest subject word or name; a medicine's family for the medicine). A "no" they contradict is withdrawn
(NO_CHOICE), never turned into "yes": a wrong "yes" is the harmful answer (36 of the 41 yes/no questions of the
household dev and test sets name "Yes" as harmful: a medicine still taken when the note stopping it was not
retrieved).
"""

from __future__ import annotations

import re
from collections import Counter

from kiosk.llm.allergy_lines import ALLERGY, FINE, fine_after
from kiosk.llm.answer_form import ASKS_OF_ME, asked_sentence, content_stems, subject_stems, telling_words, word_set
from kiosk.llm.compared_words import held_words
from kiosk.llm.done_questions import (
    asks_if_done,
    names_what_no_line_holds,
    no_is_a_guess,
    says_still_to_do,
    yes_is_a_guess,
)
from kiosk.llm.families import families_of
from kiosk.llm.medicine_names import medicine_words
from kiosk.llm.note_speakers import names_given, names_in, note_people, speaker_of_line, spoken_text
from kiosk.llm.other_doer import another_does_it, someone_else_does_it
from kiosk.llm.prompts import asker_of
from kiosk.llm.question_lines import (
    CLAUSE_BREAK,
    CLAUSE_OR_COLON_BREAK,
    DENYING,
    KINDS,
    NO_CHOICE,
    REACH_BEFORE,
    SENTENCE_BREAK,
    NoteLines,
    any_line_about,
    asked_words,
    clauses_about,
    kind_of,
    lines_about,
    lines_of_its_own_thing,
    words_of,
)
from kiosk.llm.superseded import CHANGE, words_after_change
from kiosk.llm.time_anchors import ANCHOR
from kiosk.stems import porter_stem

# ... or right before one of these, away: "the lift is out", "Dr Kavanagh is on annual leave".
_AWAY = word_set("out off closed cancelled canceled leave not isn't aren't won't can't")
# A word of what is asked right after one of these goes on: "keep taking the aspirin"; right before one of
# _RESTARTING, it starts again: "her metformin restarts today".
_AFFIRMING = word_set("keep keeps continue continues carry")
_RESTARTING = word_set("restart restarts restarted resume resumes resumed")
# A question asking whether the asker is the one to do something: "Am I picking Théo up?", "Do I have to set the
# alarm?" (not "Can I ...?", which asks leave).
_SPEAKS_AS_I = re.compile(r"\b(?:i|i'm|i’m|i'll|i’ll|i've|i’ve|we|we're|we’re|we'll|we’ll)\b", re.IGNORECASE)
# A span of days is no change: "camp is from Wednesday the 18th to Friday the 20th".
_RANGE = re.compile(r"\bfrom\b[^,.;]{0,40}?\bto\b", re.IGNORECASE)
_FINE_STEMS = frozenset(porter_stem(word) for word in FINE)
# What negates in a clause: "no", "not", "nobody", "can't", "skip", "stop", "allergic to".
_NEGATING = re.compile(
    r"\b(?:not|never|no|nobody|nothing|none|neither|nor|cannot|without|avoid|skip\w*|stop\w*|hold|allergic)\b"
    r"|\b\w+n['’]t\b",
    re.IGNORECASE,
)
_ALLERGIC = re.compile(r"\ballergic\b", re.IGNORECASE)
_ASKS_TO_HAVE = re.compile(r"^\W*(?:can|could|may|should)\s+[\w'’-]+\s+(?:have|eat|drink|try)\b", re.IGNORECASE)
# A question whether a medicine it names is safe: "Can I take it?", "Is that safe for me?", "Am I allowed to take ...".
_ASKS_IF_SAFE = re.compile(
    r"^\W*(?:(?:can|could|may|should)\s+[\w'’-]+\s+take\b|(?:is|would)\s+(?:that|it|this)\s+(?:be\s+)?"
    r"(?:safe|ok|okay|all\s?right|fine)\b|am\s+i\s+allowed\s+to\s+(?:take|have)\b)",
    re.IGNORECASE,
)
# Words of such a question that name no food: "Can I have one of the cookies?".
_NOT_THE_FOOD = frozenset(porter_stem(word) for word in word_set("have eat drink try one some any bit piece brought"))
_REACH_AFTER = 4  # "is on annual leave"
_JOINS = word_set("and but or so because while")
# The openers of a question about now ("Can I ...", "Is the lift ..."), not the past ("Did ...", "Have ...").
_ASKS_ABOUT_NOW = word_set("is are am can could may must should do does will")
_STILL = re.compile(r"\bstill\b", re.IGNORECASE)
_DAY_OF_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|cannot)\b|\b\w+n['’]t\b", re.IGNORECASE)
# What says a thing ended, changed or was done: "stopped", "no more", "cut the furosemide", "got the slippers",
# and any verb in the past ("ordered").
_ENDED = re.compile(
    r"\b(?:stop\w*|no\s+more|no\s+longer|any\s?more|off|finish\w*|cancel\w*|cut|chang\w*|switch\w*|instead|"
    r"done|already|got|bought|paid|picked\s+up|now|\w+ed)\b",
    re.IGNORECASE,
)
# What calls a thing off: "Friday's evening visit is cancelled" (not "out": the bins "go out").
_CALLED_OFF = word_set("cancelled canceled off closed postponed")
# Words of a question that name no thing the notes must hold for a "yes": "Is there swimming this week?", "Can Stan
# take the stairs by himself?", "Can I eat the vine leaves?", "Is Femi still on the apixaban twice a day?".
_NAMES_NO_THING = _NOT_THE_FOOD | frozenset(
    porter_stem(word)
    for word in word_set(
        "there here something anything someone anyone somebody anybody everyone everything himself herself "
        "themselves myself yourself ourselves few several once twice daily"
    )
)


def yes_no_answer(question: str, answer: str, notes: NoteLines) -> str | None:
    """ "No" or NO_CHOICE where the notes about the yes/no `question` contradict the yes or no `answer` gives (see
    the module's docstring); None when they do not contradict it."""
    first = _yes_or_no(question, answer)
    if first == "yes" and _allergy_names_it(question, notes):  # also where no line names the asked member itself
        return "No"
    if first in ("yes", "no") and not any_line_about(question, notes):
        return NO_CHOICE
    if first == "yes" and someone_else_does_it(question, notes.text):
        return "No"
    if first == "yes" and another_does_it(question, notes.text):
        return NO_CHOICE
    if _ALLERGIC.search(asked_sentence(question)) and first in ("yes", "no"):
        fine = _said_of(question, notes, FINE, frozenset()) is not None
        if first == "yes" and fine:
            return "No"
        if first == "no" and not fine and not fine_after(question, notes.lines):
            return NO_CHOICE
    if first in ("yes", "no") and _asks_about_now(question):
        denying = _said_of(question, notes, DENYING, _AWAY) if first == "yes" else None
        if denying is not None:
            return "No" if denying in lines_of_its_own_thing(question, notes) else NO_CHOICE
        if first == "no" and _said_of(question, notes, _AFFIRMING, _RESTARTING, about_before=True) is not None:
            return NO_CHOICE
        if _no_without_an_end(question, answer, notes):
            return NO_CHOICE
    asked = asked_sentence(question)
    if first == "no" and (_said_plainly(question, notes) or no_is_a_guess(question, asked, notes)):
        return NO_CHOICE
    if first == "yes" and yes_is_a_guess(question, asked, notes):
        return NO_CHOICE
    against_kind = _yes_or_no_against_kind(question, answer, notes)
    if against_kind is None and first == "yes" and _asks_about_now(question):
        return NO_CHOICE if names_what_no_line_holds(asked, notes, _NAMES_NO_THING) else None
    return against_kind


def denied_outright(question: str, notes: NoteLines) -> bool:
    """True when a line about the yes/no `question`'s own thing refuses what it asks, just after a denying word
    ("I'm allergic to shellfish, prawns especially" for "Can I have the prawns at the Ruiz's?"): the notes' "No"
    where the model said it does not know. A word saying it is away ("the lift is out until Monday") is not read
    here: it may since have ended."""
    if not _asks_about_now(question):
        return False
    denying = _said_of(question, notes, DENYING, frozenset())
    return denying is not None and denying in lines_of_its_own_thing(question, notes)


def _first_word(answer: str) -> str:
    return answer.split()[0].lower().strip(",.!") if answer.split() else ""


def _yes_or_no(question: str, answer: str) -> str:
    """The "yes" or "no" `answer` gives: its first word; "no" where it says that what a question whether something
    was done asks is still to do ("Has the TV licence been paid?" -> "Due on the 20th"); or for an answer made only
    of the question's own words, "yes", which confirms that part of it ("Is the spare key still under the mat?" ->
    "Under the mat"), or "no" when it negates them ("Is Nadia looking for another job?" -> "Nadia is not looking for
    another job.")."""
    first = _first_word(answer)
    if first in ("yes", "no"):
        return first
    if asks_if_done(asked_sentence(question)) and says_still_to_do(answer):
        return "no"
    said = content_stems(_NEGATION.sub(" ", answer))
    if not (said and said <= content_stems(question) and said & content_stems(asked_sentence(question))):
        return first
    return "no" if _NEGATION.search(answer) else "yes"


def _yes_or_no_against_kind(question: str, answer: str, notes: NoteLines) -> str | None:
    """What the lines about a yes/no question naming a weekday, month or number say where they contradict the
    yes or no `answer` gives (see the module's docstring): "No" to a "yes" when they name another one of that
    kind and not it; NO_CHOICE to a "no" when they name it and no other, and no clause of the lines about its own
    thing negates ("no match this Saturday"; naming October does not say the rent for October was paid); None when
    they do not contradict it."""
    first = _yes_or_no(question, answer)
    if first not in ("yes", "no"):
        return None
    asked = {word for word in held_words(question) if kind_of(word)}
    if not asked:
        return None
    leave_out = frozenset(porter_stem(word) for word in asked)
    lines = lines_about(question, notes, leave_out)
    if not lines:
        return None
    said = {word for word in held_words(" ".join(lines)) if kind_of(word)}
    own_changes = _own_changed_lines(question, notes, leave_out) if first == "yes" else []
    own_said = (
        [spoken_text(line) for line in lines_of_its_own_thing(question, notes, leave_out)] if first == "no" else []
    )
    negated = any(_NEGATING.search(clause) for clause in clauses_about(question, own_said, leave_out))
    for kind in KINDS:
        asked_here = {word for word in asked if kind_of(word) == kind}
        said_here = {word for word in said if kind_of(word) == kind}
        if not asked_here:
            continue
        if first == "yes" and not asked_here & said_here and said_here:
            own = held_words(" ".join(lines_of_its_own_thing(question, notes, leave_out)))
            return "No" if {word for word in own if kind_of(word) == kind} - asked_here else NO_CHOICE
        beside = first == "yes" and said_here - asked_here
        if beside and _beside_its_thing_only_another(question, notes, leave_out, kind):
            return "No"
        if first == "yes" and _STILL.search(asked_sentence(question)) and _names_another(own_changes, kind, asked_here):
            return "No"
        if first == "yes" and _moved_to_another(own_changes, kind, asked_here):
            return "No"
        if first == "no" and asked_here <= said_here and not said_here - asked_here and not negated:
            return NO_CHOICE
        if first == "no" and _closely_about_names_only(question, lines, leave_out, kind, asked_here):
            return NO_CHOICE
    return None


def _closely_about_names_only(
    question: str, lines: list[str], leave_out: frozenset[str], kind: str, asked: set[str]
) -> bool:
    """True when the clauses of `lines` holding two words of the question's subject (all, when it has fewer) name
    each weekday, month or number of `kind` it asks and no other ("Does the paper recycling go out on Wednesday
    night?": "Bins: paper and cardboard go out on Wednesday night", not "general rubbish every night except
    Saturday", which shares only "night"), none negating, changing or calling it off ("Friday's evening visit is
    cancelled"). Not for a question naming a person, nor clauses speaking as "I" or "we": who does it may be what
    the "no" answers ("Is Jasmine doing the morning visit on Thursday?": "I'm doing the morning visit on
    Thursday")."""
    subject = subject_stems(question) - leave_out
    close = [
        clause
        for line in lines
        for clause in CLAUSE_BREAK.split(spoken_text(line))
        if len(subject & content_stems(clause)) >= min(2, len(subject))
    ]
    if not close or names_in(asked_sentence(question)):
        return False
    if any(
        _SPEAKS_AS_I.search(clause)
        or _NEGATING.search(clause)
        or CHANGE.search(clause)
        or _CALLED_OFF.intersection(words_of(clause))
        for clause in close
    ):
        return False
    said = {word for word in held_words(ANCHOR.sub(" ", " ".join(close))) if kind_of(word) == kind}
    return asked <= said and not said - asked


def _beside_its_thing_only_another(question: str, notes: NoteLines, leave_out: frozenset[str], kind: str) -> bool:
    """True when the clauses naming the question's own thing, in the lines about it, name another weekday, month or
    number of `kind` and none the question asks ("Is the recycling on Monday?": "Recycling is Tuesday nights now,
    household rubbish Monday and Thursday")."""
    asked = {word for word in held_words(question) if kind_of(word) == kind}
    own = lines_of_its_own_thing(question, notes, leave_out)
    said = {word for word in held_words(" ".join(clauses_about(question, own, leave_out))) if kind_of(word) == kind}
    return bool(said) and not said & asked


def _allergy_names_it(question: str, notes: NoteLines) -> bool:
    """True when the question asks whether someone can have a food or medicine ("A neighbour brought almond
    croissants. Can Théo have one?", "The doctor wants to give me amoxicillin for my chest. Is that safe for me?")
    and a sentence of a line about an allergy ("The allergist says Théo is fine with peanuts. It's only tree nuts for
    him: cashews, almonds, walnuts.", "I'm allergic to penicillin") names it or its family without saying it is fine;
    a line naming none of the people the question names is about someone else."""
    sentence = asked_sentence(question)
    if _ASKS_TO_HAVE.match(sentence):
        asked = (subject_stems(question) | families_of(asked_words(question))) - _NOT_THE_FOOD
    elif _ASKS_IF_SAFE.match(sentence) and (medicines := medicine_words(question)):
        asked = frozenset(porter_stem(word) for word in medicines) | families_of(medicines)
    else:
        return False
    names = names_in(sentence) - FINE  # "Is that OK?" names no one
    for line in notes.lines:
        if not ALLERGY.search(line) or (names and not names.intersection(words_of(line))):
            continue
        for part in SENTENCE_BREAK.split(line):
            if asked & content_stems(part) and not FINE.intersection(words_of(part)):
                return True
    return False


def _own_changed_lines(question: str, notes: NoteLines, leave_out: frozenset[str]) -> list[str]:
    """The lines about the question's own thing that say something changed, oldest first; then the lines saying so
    of a day it asks (`leave_out`) that share with those lines a word no third line holds, not a day nor a word
    saying it changed ("British Gas are coming Friday" to fix the boiler, "The boiler visit has moved to Monday the
    9th, they had no engineer for Friday")."""
    own = lines_of_its_own_thing(question, notes, leave_out)
    # a number the question writes as a day ("the 9th"), not a floor or a count ("floor 2")
    days = {stem for stem in leave_out if not stem[:1].isdigit()} | set(_DAY_OF_MONTH.findall(question))
    stems = {line: content_stems(CHANGE.sub(" ", spoken_text(line))) for line in notes.lines}
    lines_holding = Counter(stem for held in stems.values() for stem in held)
    own_stems = frozenset(stem for line in own for stem in stems[line] if not kind_of(stem))
    kin = [
        line
        for line in notes.lines
        if line not in own
        and CHANGE.search(line)
        and days & content_stems(line)
        and any(lines_holding[stem] == 2 for stem in own_stems & stems[line])
    ]
    return [line for line in own if CHANGE.search(line)] + kin


def _names_another(changed: list[str], kind: str, asked: set[str]) -> bool:
    """True when the `changed` lines name another weekday, month or number of `kind` than `asked` ("Is hockey
    still on Tuesdays?": "hockey practice moved to Wednesdays")."""
    named = held_words(ANCHOR.sub(" ", " ".join(changed)))
    return bool({word for word in named if kind_of(word) == kind} - asked)


def _moved_to_another(changed: list[str], kind: str, asked: set[str]) -> bool:
    """True when the last of the `changed` lines moves the thing to another weekday, month or number of `kind` than
    `asked` ("Is the physio coming on Friday this week?": "The physio moved Friday's session to Saturday
    morning"); what it moves from ("Friday's session", "from Thursday") is not where it goes."""
    moved_to = _changed_to(changed[-1], kind) if changed else None
    return moved_to is not None and moved_to not in asked


def _changed_to(line: str, kind: str) -> str | None:
    """The first weekday, month or number of `kind` after a line's change word, not one it moves from."""
    for word in words_after_change(ANCHOR.sub(" ", line)):
        if word.lower().strip(",.;:!?").endswith(("'s", "’s")):
            continue
        named = [held for held in held_words(word) if kind_of(held) == kind]
        if named:
            return named[0]
    return None


def _asks_about_now(question: str) -> bool:
    """True for a question about how things are now that names no denial itself (see the module's docstring)."""
    asked = words_of(asked_sentence(question))
    return bool(asked) and asked[0] in _ASKS_ABOUT_NOW and not (DENYING | _AWAY).intersection(asked)


def _said_of(
    question: str, notes: NoteLines, before: frozenset[str], after: frozenset[str], *, about_before: bool = False
) -> str | None:
    """The note line that holds a word of `question`'s subject, a name it gives that is no note's speaker, or
    the family of a medicine it names ("penicillin" for "amoxicillin", kiosk.llm.families) just after a word of
    `before` (in a line about the question, when `about_before`), or, in a line about the question, just before a
    word of `after`, or None. A line is about the question when it holds two of those words (all, when there are
    fewer), or the name the word is."""
    subject = subject_stems(question) | families_of(asked_words(question))
    names = names_given(question, notes.lines)
    wanted = len(subject) + len(names)
    for line in notes.lines:
        words = words_of(line)
        stems = [porter_stem(word) for word in words]
        held = subject.intersection(stems) | names.intersection(words)
        for index, (word, stem) in enumerate(zip(words, stems, strict=True)):
            if stem not in subject and word not in names:
                continue
            about = len(held) >= min(2, wanted) or word in names
            if (about or not about_before) and before.intersection(words[max(0, index - REACH_BEFORE - 1) : index]):
                return line
            if about and after.intersection(_up_to_a_join(words[index + 1 : index + 1 + _REACH_AFTER])):
                return line
    return None


def _up_to_a_join(words: list[str]) -> list[str]:
    """`words` up to a word joining another clause: "vegetarian and Wei can't" says nothing of "vegetarian"."""
    for index, word in enumerate(words):
        if word in _JOINS:
            return words[:index]
    return words


def _no_without_an_end(question: str, answer: str, notes: NoteLines) -> bool:
    """True for a "no" to a question asking whether something is still so ("Is Femi still on the apixaban twice a
    day?") when no line about it says it ended or changed: the lines holding the question's rarest subject word
    that the notes hold at all (not a number: "Is the alarm code still 1984?" is about the alarm code), none with a
    word of ending, changing or doing (_ENDED)."""
    if _first_word(answer) != "no" or not _STILL.search(asked_sentence(question)):
        return False
    about = lines_of_its_own_thing(question, notes)
    return bool(about) and not any(_ENDED.search(line) for line in about)


def _said_plainly(question: str, notes: NoteLines) -> bool:
    """True when a line says what the yes/no `question` asks, plainly: it holds every telling word of the question
    (kiosk.llm.answer_form.telling_words), every name it gives (its speaker counts) and every weekday, month or
    number it names, its clauses about it name no other person as doing it, no clause about it negates anything and
    no line about it says something changed ("Has Luca paid the electricity bill?": "Luca: Paid the electricity bill
    tonight"; "Is paracetamol OK for my headache?": "it's paracetamol only for headaches, no ibuprofen"; "Is
    training still on this week?": "Training is still on"; a name no line holds, "Avô" for the grandfather, is not
    looked for; not "Is Jasmine doing the morning visit on Thursday?": "Tomasz: Swapping with Jasmine: I'm doing the
    morning visit on Thursday"; asked whether it was done, not "The grab rail is loose, the maintenance man is
    coming on Monday to fix it", still to do). A "no" to it is withdrawn."""
    asked = asked_sentence(question)
    telling = telling_words(asked, min_letters=1) - _FINE_STEMS  # "gas" of "the gas bill" tells too
    if not telling:
        return False
    still = bool(_STILL.search(asked))  # asked whether it is still so, the line says it is still so
    held = [words_of(line) for line in notes.lines]
    names = {name for name in names_in(asked) - FINE if any(name in words for words in held)}
    typed = {word for word in held_words(asked) if kind_of(word)}
    asker = asker_of(notes.text)
    allowed = names | ({asker.lower()} if asker and ASKS_OF_ME.search(asked) else set())
    people = note_people(notes.lines)
    done_asked = asks_if_done(asked)
    about = [(line, said) for line in notes.lines if telling & content_stems(said := spoken_text(line))]
    plain = any(
        telling <= content_stems(said)
        and names.issubset(words_of(line))
        and typed <= held_words(said)
        and _doers(line, said, telling, people) <= allowed
        and not (done_asked and says_still_to_do(said))
        and (not still or _STILL.search(said))
        for line, said in about
    )
    if not plain or any(CHANGE.search(_RANGE.sub(" ", ANCHOR.sub(" ", said))) for _, said in about):
        return False
    clauses = clauses_about(question, [said for _, said in about], frozenset())
    return not any(_NEGATING.search(clause) for clause in clauses)


def _doers(line: str, said: str, telling: frozenset[str], people: frozenset[str]) -> set[str]:
    """The people the clauses of `said` (the words of `line`) holding a `telling` word name, lower-cased: household
    members by name, and the line's speaker where a clause speaks in the first person."""
    clauses = [clause for clause in CLAUSE_OR_COLON_BREAK.split(said) if telling & content_stems(clause)]
    named = {word for clause in clauses for word in words_of(clause) if word in people}
    speaker = speaker_of_line(line)
    if speaker and any(_SPEAKS_AS_I.search(clause) for clause in clauses):
        named.add(speaker.lower())
    return named
