"""Ask for JSON matching a schema: constrained decoding, pydantic validation, one retry, then give up cleanly."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from kiosk.errors import LLMError
from kiosk.llm.backend import LLM, Message
from kiosk.llm.prompts import RETRY_NOTE

log = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)
Outcome = Literal["parsed", "retried", "failed"]


@dataclass
class Structured(Generic[ModelT]):
    """The validated value (None when both attempts failed), how it went, and the raw replies."""

    value: ModelT | None
    outcome: Outcome
    replies: list[str]
    errors: list[str]
    completion_tokens: int = 0


def _validate(model: type[ModelT], reply: str) -> ModelT:
    # llama-cpp-python's schema-to-grammar string rule admits raw control characters (a newline inside a
    # string): valid to the grammar, rejected by strict json. The content is fine, so accept it.
    return model.model_validate(json.loads(reply, strict=False))


def ask_structured(
    llm: LLM,
    messages: list[Message],
    model: type[ModelT],
    schema: dict[str, Any],
    *,
    max_tokens: int,
    what: str,
) -> Structured[ModelT]:
    """First attempt greedy; on an invalid reply, one retry that names the problem (with 1.5x the token
    budget when the first reply was cut off by it); then `failed`."""
    replies: list[str] = []
    errors: list[str] = []
    tokens = 0
    attempt_messages = list(messages)
    budget = max_tokens
    for attempt in range(2):
        try:
            reply = llm.chat(attempt_messages, max_tokens=budget, temperature=0.0, json_schema=schema)
        except LLMError as exc:
            errors.append(exc.one_line())
            log.warning("%s: LLM call failed (attempt %d): %s", what, attempt + 1, exc.one_line())
            continue
        usage = getattr(llm, "last_usage", None)
        used = int(getattr(usage, "completion_tokens", 0))
        tokens += used
        replies.append(reply)
        try:
            value = _validate(model, reply)
        except (ValueError, ValidationError) as exc:
            error = str(exc).splitlines()[0][:200]
            errors.append(error)
            log.warning("%s: invalid structured reply (attempt %d): %s", what, attempt + 1, error)
            if used >= budget:
                # Cut off by the token budget: greedy decoding would repeat the same cut; give room instead.
                budget = budget * 3 // 2
            attempt_messages = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": RETRY_NOTE.format(error=error)},
            ]
            continue
        return Structured(value, "parsed" if attempt == 0 else "retried", replies, errors, tokens)
    log.error("%s: no valid structured reply after a retry; storing without these attributes", what)
    return Structured(None, "failed", replies, errors, tokens)
