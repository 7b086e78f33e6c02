"""The note lines of an answering prompt, where each stands, and the prompt asked again with some left out.

The answer steps that find the model misled by a line of its notes (kiosk.llm.superseded, kiosk.llm.filing_days)
read the lines here and ask the model once more without the misleading ones; the second answer is the model's own,
read from the notes that remain.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import cast

from kiosk.llm.answer_form import shown_answer
from kiosk.llm.backend import LLM, Message

DAY_HEADER = re.compile(r"^\[(?P<day>[^\[\]]+)\]$")


@dataclass(frozen=True)
class NoteLine:
    """A note line of the prompt, where it stands: its notes block, its place in it, and the day it is filed
    under."""

    block: int
    index: int
    day: date | None
    text: str

    def before(self, other: NoteLine) -> bool:
        """Said before `other`: on an earlier day, or earlier in the same block (each block is oldest first)."""
        if self.day is None or other.day is None:
            return False
        if self.day != other.day:
            return self.day < other.day
        return self.block == other.block and self.index < other.index


def note_lines(prompt: str) -> list[NoteLine]:
    """Every note line inside the <notes> blocks of a prompt's text, with its block, place and day."""
    lines: list[NoteLine] = []
    for block, part in enumerate(prompt.split("<notes>")[1:]):
        day: date | None = None
        for index, raw in enumerate(part.split("</notes>", 1)[0].splitlines()):
            line = raw.strip()
            header = DAY_HEADER.match(line)
            if header:
                day = filing_day(header.group("day"))
            elif line:
                lines.append(NoteLine(block, index, day, line))
    return lines


def filing_day(text: str) -> date | None:
    """The day of a day header's text ("6 October 2026"), None when it is not one."""
    try:
        return datetime.strptime(text, "%d %B %Y").date()
    except ValueError:
        return None


def without_lines(messages: Sequence[Message], left_out: Callable[[str], bool]) -> list[Message]:
    """`messages` with the lines inside their user turns' <notes> blocks for which `left_out` is true (stripped
    lines, day headers included) left out, and a day header left with no line under it dropped too."""
    return [
        {**message, "content": _without(message["content"], left_out)}
        if message["role"] == "user" and "<notes>" in message["content"]
        else message
        for message in messages
    ]


def _without(prompt: str, left_out: Callable[[str], bool]) -> str:
    kept: list[str] = []
    inside = False
    for raw in prompt.split("\n"):
        line = raw.strip()
        if "<notes>" in line:
            inside = True
        elif "</notes>" in line:
            inside = False
        elif inside and line and left_out(line):
            continue
        if kept and DAY_HEADER.match(kept[-1].strip()) and (DAY_HEADER.match(line) or "</notes>" in line):
            kept.pop()
        kept.append(raw)
    return "\n".join(kept)


def asked_again_without(
    llm: object,
    messages: list[Message],
    question: str,
    left_out: Callable[[str], bool],
    *,
    max_tokens: int,
    temperature: float,
    concise: bool,
    clean: Callable[[str], str] = str.strip,
) -> str | None:
    """The shown answer of the model asked again with the note lines `left_out` marks left out (without_lines);
    None when the answer is empty."""
    again = cast(LLM, llm).chat(without_lines(messages, left_out), max_tokens=max_tokens, temperature=temperature)
    shown = shown_answer(question, clean(str(again)), concise)
    return shown if shown.strip() else None
