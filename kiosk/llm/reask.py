"""One more answer when the first only restates the question.

The 0.5B model answers about one LoCoMo question in fifteen with the question's own words ("What kind of
flowers does Audrey have a tattoo of?" -> "flowers"; "Where did Deborah meet her new neighbor Anna?" -> "Anna"),
although the notes it was given often name the answer. Such an answer tells the person nothing. Asked again in a
second turn ("That only repeats words of the question ..."), the model either repeated itself or, offered the
choice, said "I don't know" every time. What works is to generate the answer once more with the first answer's
words ruled out as the first word ("Yoga in the park."): llama.cpp bans their first tokens at the first position
only (kiosk.llm.llamacpp.LlamaCppLLM.chat_avoiding_first_words). The new answer is shown unless it restates the
question too; a backend without that ability keeps the first answer.

Without notes there is nothing to answer from: an answer that restates the question then is a guess in the
question's words (a stranger asking "What kind of pot did Mel make?" got "Pot"), shown as "I don't know".
"""

from __future__ import annotations

import string
from collections.abc import Callable

from kiosk.config import LLMConfig
from kiosk.llm.answer_form import restates_question, shown_answer
from kiosk.llm.backend import Message
from kiosk.llm.prompts import UNKNOWN_ANSWER


def replaced_restatement(
    llm: object,
    messages: list[Message],
    question: str,
    reply: str,
    shown: str,
    *,
    notes_given: bool,
    settings: LLMConfig,
    max_tokens: int,
    temperature: float,
    clean: Callable[[str], str] = str.strip,
) -> str | None:
    """What is shown instead of `shown` (the shown form of `reply`) when it only restates `question`: with notes a
    second answer (llm.reask_restated), without notes "I don't know" (llm.unknown_restated_without_notes); None
    keeps `shown`."""
    if not restates_question(question, shown):
        return None
    if not notes_given:
        return UNKNOWN_ANSWER if settings.unknown_restated_without_notes else None
    if not settings.reask_restated:
        return None
    return reasked_answer(
        llm,
        messages,
        question,
        reply,
        max_tokens=max_tokens,
        temperature=temperature,
        concise=settings.concise_answers,
        clean=clean,
    )


def reasked_answer(
    llm: object,
    messages: list[Message],
    question: str,
    reply: str,
    *,
    max_tokens: int,
    temperature: float,
    concise: bool,
    clean: Callable[[str], str] = str.strip,
) -> str | None:
    """The shown answer of a second try for `reply`, whose shown answer restates `question` (replaced_restatement
    checks that), with its words banned as the first word; None when the backend cannot ban them or the second
    answer restates the question too."""
    avoid = getattr(llm, "chat_avoiding_first_words", None)
    if avoid is None:
        return None
    words = sorted({word.strip(string.punctuation + "‘’“”") for word in reply.split()} - {""})
    try:
        again = clean(avoid(messages, words, max_tokens=max_tokens, temperature=temperature))
    except NotImplementedError:  # a wrapper whose backend cannot ban first words
        return None
    shown = shown_answer(question, again, concise)
    return None if not shown.strip() or restates_question(question, shown) else shown
