"""Answer profiles: the named lists of steps that turn a model's reply into the answer shown (llm.answer_profile).

A small model has habits a larger one may not: the 0.5B model restates the question, answers with the question's
own words or only a speaker's name, and names one thing where several are asked for. The `small-model` profile
takes every step that corrects those habits (kiosk.llm.answer_steps runs them, in this order); `plain` shows the
reply as the model gave it. Whatever the profile, a reply that recites the prompt's rules is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kiosk.errors import ConfigError

Step = Literal[
    "cut-restatement",  # cut the answer's restatement of the question (kiosk.llm.answer_form)
    "reask-restated",  # with notes, answer again when the answer only restates the question (kiosk.llm.reask)
    "unknown-restated-without-notes",  # without notes, such an answer becomes "I don't know" (kiosk.llm.reask)
    "reask-speaker-names",  # with notes, answer again when the answer only names a speaker (kiosk.llm.reask)
    "complete-lists",  # with notes, complete a one-thing answer to a question asking for several (kiosk.llm.lists)
    "unknown-ungrounded",  # with notes, "I don't know" for an answer they do not give (kiosk.llm.grounding)
]


@dataclass(frozen=True)
class AnswerProfile:
    name: str
    steps: tuple[Step, ...]

    def has(self, step: Step) -> bool:
        return step in self.steps


PROFILES: dict[str, AnswerProfile] = {
    "small-model": AnswerProfile(
        "small-model",
        (
            "cut-restatement",
            "reask-restated",
            "unknown-restated-without-notes",
            "reask-speaker-names",
            "complete-lists",
            "unknown-ungrounded",
        ),
    ),
    "plain": AnswerProfile("plain", ()),
}
DEFAULT_PROFILE = PROFILES["small-model"]


def answer_profile(name: str) -> AnswerProfile:
    """The profile called `name` (ConfigError naming the known ones otherwise)."""
    profile = PROFILES.get(name)
    if profile is None:
        raise ConfigError(
            f"unknown answer profile {name!r} in setting llm.answer_profile", f"use one of: {', '.join(PROFILES)}"
        )
    return profile
