"""Answer profiles: the named lists of steps that turn a model's reply into the answer shown (llm.answer_profile).

A small model has habits a larger one may not: the 0.5B model restates the question, answers with the question's own
words or only a speaker's name, answers from a note a later one corrected or with the day a note was filed under,
names one thing where several are asked for, and copies a fact from an unrelated note rather than say it does not
know. The `small-model` profile takes the steps that improved both the household questions and LoCoMo
(kiosk.llm.answer_steps runs them, in this order). The default, `checked`, adds "I don't know" for a day, number or
name the notes about the question do not hold, for a choice they contradict, and for a day already past given as
when something is: on the development data it withdrew no right answer (household dev: 10 wrong or unanswerable;
LoCoMo sample: 2 wrong, 1 partly right), and it cuts the harmful answers by a third or more, for about 1.3 points
of LoCoMo F1 (docs/benchmarks.md). `careful` adds "I don't
know" for answers the notes do not give, `lists` the completion of one-thing answers, `weighed` "I don't know" for a
yes or no the notes argue against, each better on one measure and worse on another; `plain` shows the reply as the
model gave it. Whatever the profile, a reply that recites the prompt's rules is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kiosk.errors import ConfigError, DataError

Step = Literal[
    "cut-restatement",  # cut the answer's restatement of the question (kiosk.llm.answer_form)
    "reask-restated",  # with notes, answer again when the answer only restates the question (kiosk.llm.reask)
    "unknown-restated-without-notes",  # without notes, such an answer becomes "I don't know" (kiosk.llm.reask)
    "reask-speaker-names",  # with notes, answer again when the answer only names a speaker (kiosk.llm.reask)
    "reask-superseded",  # with notes, answer again without a note a later one changed (kiosk.llm.superseded)
    "reask-filing-days",  # with notes, answer an event's day again without the notes' days (kiosk.llm.filing_days)
    "complete-lists",  # with notes, complete a one-thing answer to a question asking for several (kiosk.llm.lists)
    "strike-done-items",  # with notes, drop the items a note says are done from what is still to do
    "complete-medicines",  # with notes, the medicines a note names beside the answered one (kiosk.llm.medicine_lists)
    "unknown-ungrounded",  # with notes, "I don't know" for an answer they do not give (kiosk.llm.grounding)
    # with notes, "I don't know" for a day, number or name they lack, a number of another kind than they hold it
    # (kiosk.llm.number_kinds), a day they name only as when it is not (kiosk.llm.denied_days) or another day's dose
    # (kiosk.llm.day_amounts)
    "unknown-unsupported",
    "answer-doer-named",  # with notes, the one they say does what a "who" question asks (kiosk.llm.doers)
    "answer-day-named",  # with notes, the day (and time) they say a "when" question's thing is (kiosk.llm.days_named)
    "answer-weekdays-named",  # with notes, the weekdays they say a "which days" question's thing is on
    "answer-still-to-do",  # with notes, what their lists name that no later note says is done (kiosk.llm.still_to_do)
    "answer-contradicted",  # with notes, their choice for a yes/no or either/or they contradict (kiosk.llm.choices)
    "unknown-contradicted",  # with notes, "I don't know" for a yes/no or either/or they contradict (kiosk.llm.choices)
    "unknown-past-days",  # "I don't know" for only past days, or days outside "this week" (kiosk.llm.past_days)
    "unknown-medicine-times",  # "I don't know" for a medicine the notes give at another time (medicine_times)
    "unknown-not-said-today",  # "I don't know" to whether it was done today, nothing said today (kiosk.llm.said_today)
    "unknown-against-notes",  # with notes, "I don't know" for a yes or no they move the model away from
    "unknown-personal-without-notes",  # without notes, "I don't know" to a question about someone's life
]


@dataclass(frozen=True)
class AnswerProfile:
    name: str
    steps: tuple[Step, ...]

    def has(self, step: Step) -> bool:
        return step in self.steps


_SMALL_MODEL: tuple[Step, ...] = (
    "cut-restatement",
    "reask-restated",
    "unknown-restated-without-notes",
    "reask-speaker-names",
    "reask-superseded",
    "reask-filing-days",
)
PROFILES: dict[str, AnswerProfile] = {
    "small-model": AnswerProfile("small-model", _SMALL_MODEL),
    # "I don't know" rather than an answer the notes naming the question's subject do not hold: more honest on
    # questions the notes do not answer, fewer correct answers (bench/results/household.md, docs/benchmarks.md).
    "careful": AnswerProfile("careful", (*_SMALL_MODEL, "unknown-ungrounded")),
    # One-thing answers completed to lists: +0.4 LoCoMo F1, no gain on the household questions.
    "lists": AnswerProfile("lists", (*_SMALL_MODEL, "complete-lists")),
    # The notes' own choice for a yes/no or either/or they contradict; "I don't know" for a day, number or name
    # the notes about the question do not hold, for a choice they contradict without making one, for a day
    # already past given as when something is, for whether something was done today when nothing was said today,
    # and, without notes, for a question about the asker's or another person's life; a list of what is still to do
    # loses the items a note says are done, and a medicine answer gains those its note's sentence names beside it
    # (issue #36; bench/results/household.md).
    "checked": AnswerProfile(
        "checked",
        (
            *_SMALL_MODEL,
            "answer-doer-named",
            "answer-day-named",
            "answer-weekdays-named",
            "answer-still-to-do",
            "answer-contradicted",
            "unknown-unsupported",
            "unknown-contradicted",
            "unknown-past-days",
            "unknown-medicine-times",
            "unknown-not-said-today",
            "unknown-personal-without-notes",
            "strike-done-items",
            "complete-medicines",
        ),
    ),
    # "I don't know" for a yes or no that the notes made less likely than the question alone does
    # (kiosk.llm.notes_shift).
    "weighed": AnswerProfile("weighed", (*_SMALL_MODEL, "unknown-against-notes")),
    "plain": AnswerProfile("plain", ()),
}
DEFAULT_PROFILE = PROFILES["checked"]


def answer_profile(name: str) -> AnswerProfile:
    """The profile called `name` (ConfigError naming the known ones otherwise)."""
    profile = PROFILES.get(name)
    if profile is None:
        raise ConfigError(
            f"unknown answer profile {name!r} in setting llm.answer_profile", f"use one of: {', '.join(PROFILES)}"
        )
    return profile


def profile_without(name: str, steps_off: tuple[str, ...]) -> AnswerProfile:
    """The answer profile `name` without the steps in `steps_off` (each must be one of its steps): the paired
    "step off" runs of the evaluations (`kiosk eval household|locomo --steps-off`)."""
    base = answer_profile(name)
    unknown = [step for step in steps_off if not base.has(step)]  # type: ignore[arg-type]
    if unknown:
        raise DataError(
            f"the {name} profile has no step {', '.join(unknown)}", f"choose from: {', '.join(base.steps) or 'none'}"
        )
    if not steps_off:
        return base
    kept = tuple(step for step in base.steps if step not in steps_off)
    return AnswerProfile(f"{name} without {'+'.join(steps_off)}", kept)
