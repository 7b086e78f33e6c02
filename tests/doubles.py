"""Deterministic test doubles shared by the test suite (unit tests only; real-model tests exist too)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kiosk.llm.backend import Message, Usage
from kiosk.memory.note import EMBEDDING_DIM

Reply = str | Sequence[str]


def unit(vector: np.ndarray) -> np.ndarray:
    """`vector` scaled to length 1, as float32 (how the store keeps embeddings)."""
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@dataclass
class LLMCall:
    kind: str  # "chat" or "stream"
    messages: list[Message]
    max_tokens: int
    temperature: float
    json_schema: dict[str, Any] | None
    stop: list[str] | None
    reply: str

    @property
    def text(self) -> str:
        return "\n".join(m.get("content", "") for m in self.messages)


class ScriptedLLM:
    """An `LLM` that answers from a script and records every call.

    `replies` maps a substring to a reply; the first key (in order) found anywhere in the messages'
    text wins, else `default`. A reply given as a list is used one item per matching call, the last
    item repeating (e.g. ["not json", '{"ok": true}'] scripts a bad first reply and a good retry).
    """

    name = "scripted"

    def __init__(self, replies: Mapping[str, Reply] | Sequence[tuple[str, Reply]] = (), default: str = "") -> None:
        items = list(replies.items()) if isinstance(replies, Mapping) else list(replies)
        self._script: list[tuple[str, list[str]]] = [
            (key, [value] if isinstance(value, str) else list(value)) for key, value in items
        ]
        self._used: dict[str, int] = {}
        self.default = default
        self.calls: list[LLMCall] = []
        self.last_usage = Usage()

    def _reply_for(self, messages: list[Message]) -> str:
        text = "\n".join(m.get("content", "") for m in messages)
        for key, answers in self._script:
            if key in text:
                used = self._used.get(key, 0)
                self._used[key] = used + 1
                return answers[min(used, len(answers) - 1)]
        return self.default

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        reply = self._reply_for(messages)
        self.calls.append(LLMCall("chat", list(messages), max_tokens, temperature, json_schema, stop, reply))
        self.last_usage = Usage(0, len(reply.split()), 0.001)
        return reply

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        reply = self._reply_for(messages)
        self.calls.append(LLMCall("stream", list(messages), max_tokens, temperature, None, None, reply))
        self.last_usage = Usage(0, len(reply.split()), 0.001)
        words = reply.split(" ")
        for i, word in enumerate(words):
            yield word if i == len(words) - 1 else word + " "


class FirstWordBanningLLM(ScriptedLLM):
    """A `ScriptedLLM` that can also answer without starting with given words (like kiosk.llm.llamacpp): its
    reply then is `second`, and the banned words are recorded in `banned`."""

    def __init__(
        self, replies: Mapping[str, Reply] | Sequence[tuple[str, Reply]] = (), default: str = "", second: str = ""
    ) -> None:
        super().__init__(replies, default)
        self.second = second
        self.banned: list[list[str]] = []

    def chat_avoiding_first_words(
        self, messages: list[Message], words: Sequence[str], *, max_tokens: int, temperature: float = 0.0
    ) -> str:
        self.banned.append(list(words))
        self.calls.append(LLMCall("avoiding", list(messages), max_tokens, temperature, None, None, self.second))
        return self.second


class ListContinuingLLM(ScriptedLLM):
    """A `ScriptedLLM` that can also continue a reply it began (like kiosk.llm.llamacpp): the continuation is
    `more`, and each reply start it was asked to continue is recorded in `starts`."""

    def __init__(
        self, replies: Mapping[str, Reply] | Sequence[tuple[str, Reply]] = (), default: str = "", more: str = ""
    ) -> None:
        super().__init__(replies, default)
        self.more = more
        self.starts: list[str] = []

    def continue_reply(self, messages: list[Message], start: str, *, max_tokens: int, temperature: float = 0.0) -> str:
        self.starts.append(start)
        self.calls.append(LLMCall("continue", list(messages), max_tokens, temperature, None, None, self.more))
        return self.more


class FirstWordScoringLLM(ScriptedLLM):
    """A `ScriptedLLM` that can also score a reply's first words (like kiosk.llm.llamacpp): the log-odds of "Yes"
    over "No" are `with_notes` for a prompt holding notes, `alone` for one holding only the question; each scored
    prompt is recorded in `scored`."""

    def __init__(self, with_notes: float, alone: float) -> None:
        super().__init__()
        self.with_notes = with_notes
        self.alone = alone
        self.scored: list[list[Message]] = []

    def first_word_logprobs(self, messages: list[Message], words: Sequence[str]) -> dict[str, float]:
        self.scored.append(messages)
        odds = self.with_notes if "<notes>" in messages[-1]["content"] else self.alone
        return {"Yes": odds / 2, "No": -odds / 2}


class BagOfWordsEncoder:
    """A deterministic stand-in for the text encoder: hashed bag of words, L2-normalised."""

    def __init__(self, word: str = r"[a-z]+") -> None:
        self.word = re.compile(word)

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(sentences), EMBEDDING_DIM), dtype=np.float32)
        for row, sentence in enumerate(sentences):
            for word in self.word.findall(sentence.lower()):
                out[row, zlib.crc32(word.encode()) % EMBEDDING_DIM] += 1.0
            out[row, EMBEDDING_DIM - 1] += 0.1  # never a zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode_one(self, sentence: str) -> np.ndarray:
        return self.encode([sentence])[0]


def answer_prompt(notes_blocks: str, question: str) -> str:
    """The tail of a compact answer prompt as kiosk.llm.prompts writes it: the notes blocks, then the question."""
    return f"{notes_blocks}\n\nQuestion: {question}\nAnswer:"
