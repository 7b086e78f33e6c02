"""The language-model interface the kiosk talks to, whatever runs behind it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, cast

Message = dict[str, str]


@dataclass
class Usage:
    """Token counts and wall time of the last call (for benchmarks and logs)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds > 0 else 0.0


class LLM(Protocol):
    name: str

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        """One complete reply. With `json_schema`, decoding is constrained to JSON matching it."""
        ...

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        """The reply piece by piece as it is generated."""
        ...


def optional_ability(backend: object, method: str, ability: str) -> Callable[..., Any]:
    """`backend`'s optional `method` (llama.cpp's chat_avoiding_first_words, continue_reply); NotImplementedError,
    naming `ability`, when it has none. For wrappers, which must not hide that their backend lacks it."""
    call = getattr(backend, method, None)
    if call is None:
        raise NotImplementedError(f"{getattr(backend, 'name', 'the LLM')} cannot {ability}")
    return cast(Callable[..., Any], call)


def call_if_able(backend: object, method: str, *args: Any, **kwargs: Any) -> Any | None:
    """`backend.method(*args, **kwargs)` (an optional ability, see optional_ability), or None when the backend, or
    the backend a wrapper holds, does not have it: the answer step that needs it is then skipped."""
    call = getattr(backend, method, None)
    if call is None:
        return None
    try:
        return call(*args, **kwargs)
    except NotImplementedError:  # a wrapper whose backend lacks the ability
        return None


def reply_if_able(backend: object, method: str, *args: Any, **kwargs: Any) -> str | None:
    """The reply of `backend`'s optional `method`, as call_if_able gives it, as text."""
    reply = call_if_able(backend, method, *args, **kwargs)
    return None if reply is None else str(reply)
