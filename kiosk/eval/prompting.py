"""The evaluation's short-answer prompt and memory serialisation (a variant of the assistant's answer prompt).

LoCoMo scores answers by token overlap, so a chatty sentence around a right answer loses most of its
F1. This variant asks for the bare answer phrase, gives every memory its session date (temporal
questions are answered from those dates, as in LoCoMo's own pipeline), and asks the model to say it
does not know when the memories do not hold the answer instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

UNKNOWN_ANSWER = "I don't know"

SYSTEM_PROMPT = (
    "You answer questions about a person's past conversations using only the memories given. "
    "Reply with the shortest exact answer: a few words, a name, a number or a date, never a full sentence "
    "and never an explanation. When several things are asked for, list them separated by commas. "
    "For questions about when something happened, give the date using the memory dates, like '7 May 2023'. "
    f"If the memories do not contain the answer, reply exactly: {UNKNOWN_ANSWER}."
)

SYSTEM_PROMPT_NO_MEMORY = (
    "You answer questions about a person's past conversations, but no memories of this person are available. "
    f"Reply with the shortest answer you can, a few words at most; if you cannot know it, reply exactly: "
    f"{UNKNOWN_ANSWER}."
)


@dataclass(frozen=True)
class Memory:
    timestamp: datetime
    content: str


_FAST_CONTEXT = re.compile(r"^(?P<speaker>.+?) said this on .+$")


def note_line(content: str, context: str) -> str:
    """A note as the model sees it: who said it, then the words; an LLM-written context follows them.

    Fast-mode notes carry "<speaker> said this on <date>." as context: only the speaker is kept (the
    date is already the line's prefix), which keeps the prompt short for small CPU models.
    """
    content = " ".join(content.split())
    context = " ".join(context.split())
    fast = _FAST_CONTEXT.match(context)
    if fast:
        return f"{fast.group('speaker')}: {content}"
    return f"{content} ({context})" if context else content


def format_date(moment: datetime) -> str:
    return f"{moment.day} {moment:%B %Y}"


def format_memories(memories: Sequence[Memory]) -> str:
    ordered = sorted(memories, key=lambda memory: memory.timestamp)
    return "\n".join(f"- [{format_date(memory.timestamp)}] {memory.content}" for memory in ordered)


def answer_messages(question: str, memories: Sequence[Memory]) -> list[dict[str, str]]:
    if not memories:
        return [
            {"role": "system", "content": SYSTEM_PROMPT_NO_MEMORY},
            {"role": "user", "content": f"Question: {question}\nAnswer:"},
        ]
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"Memories (oldest first):\n{format_memories(memories)}\n\nQuestion: {question}\nAnswer:",
        },
    ]


_LEAD_IN = re.compile(r"^(answer|the answer is|a)\s*[:\-]\s*", re.IGNORECASE)


def clean_answer(text: str) -> str:
    """First line of the reply without a leading 'Answer:' label or wrapping quotes."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = _LEAD_IN.sub("", first).strip()
    return first.strip("\"'` ").strip()
