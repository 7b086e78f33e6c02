"""From the model's reply to the answer shown: the steps the kiosk and the eval both take, in order, each taken
only when the answer profile (kiosk.llm.profiles, llm.answer_profile) lists it.

1. The reply's shown form (kiosk.llm.answer_form): a recited prompt rule as "I don't know" (always), the
   restatement of the question cut (cut-restatement).
2. An answer made only of the question's words replaced (kiosk.llm.reask): answered again from the notes
   (reask-restated) or, without notes, "I don't know" (unknown-restated-without-notes); an answer that only names
   a speaker of the notes answered again (reask-speaker-names); an answer copied from a note a later note changed
   answered again without the earlier note (kiosk.llm.superseded, reask-superseded); an event's day answered with
   the day its note was filed under answered again without the filing days (kiosk.llm.filing_days,
   reask-filing-days). An answer asked again is judged again by the other of these two, once.
3. One thing named where the question asks for several: the list completed from the notes (kiosk.llm.lists,
   complete-lists). A list of what is still to do without the items a note says are done (kiosk.llm.done_items,
   strike-done-items). A medicine answer with the medicines its note's sentence names beside it
   (kiosk.llm.medicine_lists, complete-medicines).
4. A "who" answer not naming the one person the notes say does what is asked: that person (kiosk.llm.doers,
   answer-doer-named: "Carmen" for "Lucía" when a note says "Carmen will pick you up from volleyball"). A "when"
   answer of "I don't know", or naming only the day, where the notes say the day of the question's thing: that
   day with its weekday and time (kiosk.llm.days_named, answer-day-named: "Wednesday 21 October at 7"). A
   "which days" answer not naming the weekdays the notes say: those (kiosk.llm.weekdays_named,
   answer-weekdays-named: "Tuesday, Thursday"). What is still on a list: the items the notes' lists about it name
   that no later note says are done (kiosk.llm.still_to_do, answer-still-to-do).
   A yes/no or either/or choice the notes about the question contradict, where they make the choice themselves:
   their choice (kiosk.llm.choices, answer-contradicted: "In the morning" for "In the evening" when the ramipril's
   line says morning; "No" for "I don't know" when a line refuses what a yes/no question asks: "allergic to
   shellfish, prawns especially"). An answer the notes about the question do not give: "I don't know"
   (kiosk.llm.grounding, unknown-ungrounded);
   one naming a day, number or name they do not hold, or a number as another kind than they hold it (a time of day
   from a dose; kiosk.llm.unsupported, kiosk.llm.number_kinds, unknown-unsupported), or choosing what
   they contradict (kiosk.llm.choices, unknown-contradicted), likewise; so is a day already past given as when
   something is (kiosk.llm.past_days, unknown-past-days: only when the day the question is asked is known), a
   medicine the notes give at another time of day than the one asked (kiosk.llm.medicine_times,
   unknown-medicine-times), a
   yes or no to whether something was done today with no line of today about it (kiosk.llm.said_today,
   unknown-not-said-today, likewise), and a
   yes or no the notes moved the model away from (kiosk.llm.notes_shift, unknown-against-notes). Without notes,
   an answer to a question about the asker's or another person's life (kiosk.llm.personal_questions,
   unknown-personal-without-notes).

Each step is safe by construction (issue #36): it never removes the part of the reply that answers the question
(a cut keeps the words choosing between an either/or question's options and a yes/no reply's yes or no, and never
ends on a word leading on to what it cut), a short answer confirming part of a yes/no question is an answer, a
speaker's name is kept when that speaker's own note says what is asked, and a list gains only items a note states
with a word of what is asked or with the first item.

The eval scores the answer after each step, so one run shows what each step changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from kiosk.llm import filing_days, superseded
from kiosk.llm.answer_form import says_unknown, shown_answer
from kiosk.llm.backend import Message
from kiosk.llm.choices import checked_choice, notes_choice
from kiosk.llm.day_amounts import checked_day_amounts
from kiosk.llm.days_named import notes_day
from kiosk.llm.denied_days import checked_denied_days
from kiosk.llm.doers import notes_doer
from kiosk.llm.done_items import without_done_items
from kiosk.llm.grounding import grounded_answer
from kiosk.llm.lists import LIST_TOKENS, completed_list
from kiosk.llm.medicine_lists import with_medicines_beside
from kiosk.llm.medicine_times import checked_medicine_times
from kiosk.llm.note_lines import asked_again_without
from kiosk.llm.notes_shift import answer_against_notes
from kiosk.llm.number_kinds import checked_number_kinds
from kiosk.llm.past_days import checked_past_days
from kiosk.llm.personal_questions import asks_about_someone
from kiosk.llm.profiles import AnswerProfile, Step
from kiosk.llm.prompts import UNKNOWN_ANSWER, notes_text
from kiosk.llm.reask import replaced_restatement
from kiosk.llm.said_today import checked_said_today
from kiosk.llm.still_to_do import notes_still_to_do
from kiosk.llm.unsupported import supported_answer
from kiosk.llm.weekdays_named import notes_weekdays

# Greedy decoding: the same notes and question always give the same answer (and the eval's answer cache is exact).
ANSWER_TEMPERATURE = 0.0


# The steps that ask the model again without the note lines that misled it, in the order they are tried: each finds
# what to leave out of the notes for (question, answer, notes), or None.
_REREADS: tuple[tuple[Step, Callable[[str, str, str], Callable[[str], bool] | None]], ...] = (
    ("reask-superseded", superseded.misleading_lines),
    ("reask-filing-days", filing_days.misleading_lines),
)


def _reread(
    llm: object,
    messages: list[Message],
    question: str,
    first: str,
    notes: str,
    rereads: list[tuple[Step, Callable[[str, str, str], Callable[[str], bool] | None]]],
    **asking: Any,
) -> str | None:
    """The answer asked again without the lines that misled it, or None. Each re-read step judges the answer of
    the last asking, at most once, and the lines it finds stay left out of every later asking: a filing day asked
    again can bring up a day a later note changed ("Saturday the 7th", moved to "Sunday the 8th")."""
    answer, replaced = first, None
    left_out: list[Callable[[str], bool]] = []
    pending = list(rereads)
    while pending:
        found = next(
            ((step, lines) for step, find in pending if (lines := find(question, answer, notes)) is not None), None
        )
        if found is None:
            break
        pending = [item for item in pending if item[0] != found[0]]
        left_out.append(found[1])
        again = asked_again_without(llm, messages, question, lambda line: any(out(line) for out in left_out), **asking)
        if again is None:
            break
        answer = replaced = again
    return replaced


@dataclass(frozen=True)
class ShownAnswer:
    first: str
    """The reply's shown form (step 1)."""
    replaced: str | None = None
    """What replaced a first answer that only restated the question, named a speaker, or was misled by a superseded
    note or a filing day (step 2)."""
    listed: str | None = None
    """The list a one-thing answer began, completed, or a list without its items done (step 3)."""
    chosen: str | None = None
    """The one the notes say does it, or the choice they make in place of one they contradict (step 4)."""
    ungrounded: str | None = None
    """"I don't know" in place of an answer the notes about the question do not give, or contradict (step 4)."""

    @property
    def before_lists(self) -> str:
        return self.first if self.replaced is None else self.replaced

    @property
    def before_grounding(self) -> str:
        return self.before_lists if self.listed is None else self.listed

    @property
    def text(self) -> str:
        """The answer shown."""
        if self.ungrounded is not None:
            return self.ungrounded
        return self.before_grounding if self.chosen is None else self.chosen


def answer_without_asking(
    question: str, *, notes_given: bool, profile: AnswerProfile, people: Collection[str]
) -> str | None:
    """The answer to `question` whatever the model would reply, so the kiosk asks it nothing; None when the model
    is to be asked. Without notes, a question about someone's life is answered "I don't know"
    (kiosk.llm.personal_questions, unknown-personal-without-notes)."""
    if not notes_given and profile.has("unknown-personal-without-notes") and asks_about_someone(question, people):
        return UNKNOWN_ANSWER
    return None


def shown_reply(
    llm: object,
    messages: list[Message],
    question: str,
    reply: str,
    *,
    notes_given: bool,
    profile: AnswerProfile,
    max_tokens: int,
    temperature: float,
    clean: Callable[[str], str] = str.strip,
    asked_on: date | None = None,
    people: Collection[str] = (),
) -> ShownAnswer:
    """The answer shown for `reply`, the model's reply to `messages`, after each step (see the module's docstring);
    `max_tokens` bounds a second answer, `clean` tidies it as the first reply was, `asked_on` is the terminal's
    local day the question is asked (None for a replay without a terminal clock), `people` the names of the people
    the terminal knows."""
    concise = profile.has("cut-restatement")
    first = shown_answer(question, reply, concise)
    notes = notes_text(messages)
    replaced = replaced_restatement(
        llm,
        messages,
        question,
        reply,
        first,
        notes_given=notes_given,
        profile=profile,
        max_tokens=max_tokens,
        temperature=temperature,
        clean=clean,
    )
    if replaced is None and notes_given:
        replaced = _reread(
            llm,
            messages,
            question,
            first,
            notes,
            [(step, find) for step, find in _REREADS if profile.has(step)],
            max_tokens=max_tokens,
            temperature=temperature,
            concise=concise,
            clean=clean,
        )
    listed = None
    if profile.has("complete-lists") and notes_given and replaced is None:
        listed = completed_list(
            llm,
            messages,
            question,
            reply,
            first,
            max_tokens=LIST_TOKENS,
            temperature=temperature,
            concise=concise,
        )
    shown = ShownAnswer(first, replaced, listed)
    struck = without_done_items(question, shown.before_grounding, notes) if profile.has("strike-done-items") else None
    if struck is not None:
        shown = replace(shown, listed=struck)
    if profile.has("complete-medicines") and notes_given:
        beside = with_medicines_beside(question, shown.before_grounding, notes)
        shown = shown if beside is None else replace(shown, listed=beside)
    if not notes_given:
        known = answer_without_asking(question, notes_given=False, profile=profile, people=people)
        return shown if known is None or says_unknown(shown.text) else replace(shown, ungrounded=known)
    if profile.has("answer-doer-named"):
        doer = notes_doer(question, shown.before_grounding, notes, asked_on, people)
        if doer is not None:
            return replace(shown, chosen=doer)
    if profile.has("answer-day-named"):
        day = notes_day(question, shown.before_grounding, notes, asked_on)
        if day is not None:
            return replace(shown, chosen=day)
    if profile.has("answer-weekdays-named"):
        weekdays = notes_weekdays(question, shown.before_grounding, notes)
        if weekdays is not None:
            return replace(shown, chosen=weekdays)
    if profile.has("answer-still-to-do"):
        left = notes_still_to_do(question, notes)
        if left is not None:
            return replace(shown, chosen=left)
    if profile.has("answer-contradicted"):
        chosen = notes_choice(question, shown.before_grounding, notes)
        if chosen is not None:
            return replace(shown, chosen=chosen)
    checks: list[Callable[[str, str, str], str | None]] = []
    if profile.has("unknown-ungrounded"):
        checks.append(grounded_answer)
    if profile.has("unknown-unsupported"):
        checks.extend((supported_answer, checked_number_kinds, checked_denied_days, checked_day_amounts))
    if profile.has("unknown-contradicted"):
        checks.append(checked_choice)
    if profile.has("unknown-past-days"):
        checks.append(lambda asked, answer, _notes: checked_past_days(asked, answer, asked_on))
    if profile.has("unknown-medicine-times"):
        checks.append(checked_medicine_times)
    if profile.has("unknown-not-said-today"):
        checks.append(lambda asked, answer, notes_: checked_said_today(asked, answer, notes_, asked_on))
    if profile.has("unknown-against-notes"):
        checks.append(lambda asked, answer, _notes: answer_against_notes(llm, messages, asked, answer))
    for check in checks:
        withdrawn = check(question, shown.before_grounding, notes)
        if withdrawn is not None:
            return replace(shown, ungrounded=withdrawn)
    return shown
