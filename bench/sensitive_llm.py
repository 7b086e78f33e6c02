"""The LLM sensitivity classifier that bench_sensitive measures against the rules (removed from the product:
the default 0.5B model flagged nearly every turn, bench/results/sensitive.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from kiosk.llm.backend import LLM, Message
from kiosk.llm.structured import ask_structured
from kiosk.memory.sensitivity import CATEGORIES

CLASSIFY_MAX_TOKENS = 16
"""The reply is one short JSON object: {"category": "third_party"} is 9 tokens."""

CLASSIFY_SYSTEM = (
    "You flag private information in one chat message. Categories: health (the illness, injury, medical care, "
    "mental health, allergy or pregnancy of a real person), finance (income, debts, money amounts, bank or card "
    "details), credentials (passwords, PINs, codes), location (a home address or exact whereabouts), "
    "third_party (another person's private life: a death, divorce, arrest), none (everyday talk, hobbies, "
    "opinions, generic remarks). Reply with JSON only."
)

CLASSIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"category": {"type": "string", "enum": ["none", *CATEGORIES]}},
    "required": ["category"],
}


class Verdict(BaseModel):
    category: Literal["none", "credentials", "health", "finance", "location", "third_party"]


def classify_messages(text: str) -> list[Message]:
    return [{"role": "system", "content": CLASSIFY_SYSTEM}, {"role": "user", "content": f"Message: {text}"}]


def classify_llm(llm: LLM, text: str) -> str | None:
    """The LLM's verdict ('none' or a category), or None when it gave no valid reply after a retry."""
    reply = ask_structured(
        llm,
        classify_messages(text),
        Verdict,
        CLASSIFY_SCHEMA,
        max_tokens=CLASSIFY_MAX_TOKENS,
        what=f"sensitivity ({text[:40]!r})",
    )
    return reply.value.category if reply.value is not None else None
