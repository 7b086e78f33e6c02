"""A yes or no the notes argue against becomes "I don't know" (kiosk.llm.notes_shift, unknown-against-notes)."""

from __future__ import annotations

from datetime import datetime

import pytest

from kiosk.llm.answer_steps import shown_reply
from kiosk.llm.backend import Message
from kiosk.llm.notes_shift import answer_against_notes, notes_shift, said_yes_or_no, without_notes
from kiosk.llm.profiles import PROFILES
from kiosk.llm.prompts import COMPACT_SYSTEM, UNKNOWN_ANSWER, compact_answer_messages
from tests.doubles import FirstWordScoringLLM, ScriptedLLM

QUESTION = "Can I use the latex gloves?"
NOTES = [(datetime(2026, 10, 3, 9, 0), "Latex brings me out in a rash, I need the nitrile ones")]


def messages() -> list[Message]:
    return compact_answer_messages(QUESTION, NOTES, "Maria")


@pytest.mark.parametrize(
    ("answer", "said"),
    [("Yes", "Yes"), ("yes, the blue box", "Yes"), ("No, not with the warfarin.", "No"), ("Nothing", None), ("", None)],
)
def test_the_yes_or_no_an_answer_opens_with(answer: str, said: str | None) -> None:
    assert said_yes_or_no(answer) == said


def test_the_prompt_without_notes_keeps_the_system_prompt_and_asks_the_question_alone() -> None:
    alone = without_notes(messages(), QUESTION)
    assert alone == [
        {"role": "system", "content": COMPACT_SYSTEM},
        {"role": "user", "content": f"Question: {QUESTION}\nAnswer:"},
    ]


def test_a_yes_the_notes_made_less_likely_is_withdrawn() -> None:
    """The latex case from the household dev set: the model says "Yes" with the note about the rash, but it said
    "Yes" even more readily to the question alone."""
    assert notes_shift(FirstWordScoringLLM(with_notes=0.5, alone=2.0), messages(), QUESTION) == pytest.approx(-1.5)
    llm = FirstWordScoringLLM(with_notes=0.5, alone=2.0)
    assert answer_against_notes(llm, messages(), QUESTION, "Yes") == UNKNOWN_ANSWER
    assert [m[-1]["content"] for m in llm.scored] == [messages()[-1]["content"], f"Question: {QUESTION}\nAnswer:"]


def weighed(answer: str, with_notes: float, alone: float) -> str | None:
    return answer_against_notes(FirstWordScoringLLM(with_notes, alone), messages(), QUESTION, answer)


def test_an_answer_the_notes_moved_the_model_toward_stands() -> None:
    assert weighed("No", with_notes=-1.0, alone=2.0) is None
    assert weighed("Yes, with gloves", with_notes=2.0, alone=-1.0) is None


def test_a_no_the_notes_made_less_likely_is_withdrawn() -> None:
    assert weighed("No.", with_notes=-0.5, alone=-2.0) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Where are the gloves?", "Yes"),  # not a yes/no question
        (QUESTION, "The nitrile ones"),  # no yes or no to weigh
        (QUESTION, UNKNOWN_ANSWER),
    ],
)
def test_only_a_yes_or_no_to_a_yes_no_question_is_weighed(question: str, answer: str) -> None:
    llm = FirstWordScoringLLM(with_notes=0.5, alone=2.0)
    assert answer_against_notes(llm, messages(), question, answer) is None
    assert llm.scored == []


def test_a_backend_that_cannot_score_keeps_its_answer() -> None:
    assert answer_against_notes(ScriptedLLM(), messages(), QUESTION, "Yes") is None


def test_the_weighed_profile_withdraws_the_answer_and_the_default_does_not() -> None:
    def shown(profile: str) -> str:
        llm = FirstWordScoringLLM(with_notes=0.5, alone=2.0)
        return shown_reply(
            llm,
            messages(),
            QUESTION,
            "Yes",
            notes_given=True,
            profile=PROFILES[profile],
            max_tokens=32,
            temperature=0.0,
        ).text

    assert shown("weighed") == UNKNOWN_ANSWER
    assert shown("small-model") == "Yes"
