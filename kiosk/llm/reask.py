"""One more answer when the first only restates the question.

The 0.5B model answers about one LoCoMo question in fifteen with the question's own words ("What kind of
flowers does Audrey have a tattoo of?" -> "flowers"; "Where did Deborah meet her new neighbor Anna?" -> "Anna"),
although the notes it was given often name the answer. Such an answer tells the person nothing. Asked again in a
second turn ("That only repeats words of the question ..."), the model either repeated itself or, offered the
choice, said "I don't know" every time. What works is to generate the answer once more with the first answer's
words ruled out as the first word ("Yoga in the park."): llama.cpp bans their first tokens at the first position
only (kiosk.llm.llamacpp.LlamaCppLLM.chat_avoiding_first_words). The new answer is shown unless it restates the
question too; a backend without that ability keeps the first answer.
"""

from __future__ import annotations

import string
from collections.abc import Callable

from kiosk.llm.answer_form import restates_question, shown_answer
from kiosk.llm.backend import Message


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
    """The shown answer of a second try when `reply` (as kiosk.llm.answer_form.shown_answer shows it) only
    restates `question`; None when the first answer stands."""
    avoid = getattr(llm, "chat_avoiding_first_words", None)
    if avoid is None or not restates_question(question, shown_answer(question, reply, concise)):
        return None
    words = sorted({word.strip(string.punctuation + "‘’“”") for word in reply.split()} - {""})
    try:
        again = clean(avoid(messages, words, max_tokens=max_tokens, temperature=temperature))
    except NotImplementedError:  # a wrapper whose backend cannot ban first words
        return None
    shown = shown_answer(question, again, concise)
    return None if not shown.strip() or restates_question(question, shown) else shown
