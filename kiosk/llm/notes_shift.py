"""A yes or no the notes argue against becomes "I don't know" (issue #36, the `unknown-against-notes` step).

The 0.5B model says "Yes" to most yes/no questions, with notes or without: "Can I use the latex gloves?" -> "Yes"
when the asker's own note says latex brings them out in a rash. Whether the notes back its yes or no is read off
the model itself, as a shift (the domain-conditional PMI of Holtzman et al., 2021): the log-odds of "Yes" over "No"
as the reply's first word with the notes, minus the same with the notes left out (the question alone under the
same system prompt). A "Yes" the notes made less likely, or a "No" they made less likely, is withdrawn; nothing is
tuned, the sign of the shift decides. It costs two one-token scorings per yes/no answer: the first reuses the
answer's own evaluated prompt, the second the system prompt's kept state (kiosk.llm.llamacpp). A backend that
cannot score first words keeps its answers.
"""

from __future__ import annotations

from kiosk.llm.answer_form import QUOTES_AND_PUNCTUATION, asks_yes_or_no
from kiosk.llm.backend import Message, call_if_able
from kiosk.llm.prompts import UNKNOWN_ANSWER

CHOICE_WORDS = ("Yes", "No")


def said_yes_or_no(answer: str) -> str | None:
    """ "Yes" or "No" when the answer opens with it ("No, not with the warfarin." -> "No"), else None."""
    words = answer.split()
    first = words[0].strip(QUOTES_AND_PUNCTUATION).lower() if words else ""
    return next((word for word in CHOICE_WORDS if word.lower() == first), None)


def without_notes(messages: list[Message], question: str) -> list[Message]:
    """The answering prompt with its notes left out: the same system prompt, the question alone."""
    system = [message for message in messages if message["role"] == "system"]
    return [*system, {"role": "user", "content": f"Question: {question}\nAnswer:"}]


def yes_log_odds(llm: object, messages: list[Message]) -> float | None:
    """log P("Yes") - log P("No") as the first word of the reply to `messages`; None when `llm` cannot score."""
    logprobs = call_if_able(llm, "first_word_logprobs", messages, CHOICE_WORDS)
    return None if logprobs is None else float(logprobs["Yes"]) - float(logprobs["No"])


def notes_shift(llm: object, messages: list[Message], question: str) -> float | None:
    """How far the notes moved the model toward "Yes" (negative: toward "No"); None when it cannot score."""
    with_notes = yes_log_odds(llm, messages)
    if with_notes is None:
        return None
    alone = yes_log_odds(llm, without_notes(messages, question))
    return None if alone is None else with_notes - alone


def answer_against_notes(llm: object, messages: list[Message], question: str, answer: str) -> str | None:
    """ "I don't know" when `answer` says yes (or no) to the yes/no `question` and the notes of `messages` moved the
    model away from it; None keeps the answer."""
    said = said_yes_or_no(answer)
    if said is None or not asks_yes_or_no(question):
        return None
    shift = notes_shift(llm, messages, question)
    if shift is None:
        return None
    against = shift < 0 if said == "Yes" else shift > 0
    return UNKNOWN_ANSWER if against else None
