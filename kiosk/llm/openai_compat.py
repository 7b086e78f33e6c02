"""An OpenAI-compatible chat endpoint (llama.cpp server, Ollama, vLLM) over plain HTTP (urllib)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from kiosk.errors import LLMError
from kiosk.llm.backend import Message, Usage


class OpenAICompatLLM:
    """POSTs to `<base_url>/chat/completions`; `base_url` normally ends in `/v1`."""

    def __init__(self, base_url: str, model: str = "default", api_key: str | None = None, timeout_s: float = 120.0):
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(
                f"LLM endpoint '{base_url}' is not an http(s) URL",
                "set llm.openai.endpoint_url, e.g. http://host:8080/v1",
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"{model}@{self.base_url}"
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.last_usage = Usage()

    def _request(self, body: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            return urllib.request.urlopen(request, timeout=self.timeout_s)
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace")
            raise LLMError(
                f"LLM endpoint {self.base_url} answered HTTP {exc.code}: {detail}", "check the server log"
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise LLMError(
                f"LLM endpoint {self.base_url} is unreachable ({exc})",
                "start the server or fix llm.openai.endpoint_url",
            ) from exc

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            body["stop"] = stop
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": json_schema, "strict": True},
            }
        started = time.perf_counter()
        with self._request(body) as response:
            try:
                payload = json.loads(response.read().decode("utf-8"))
                content = payload["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise LLMError(
                    f"LLM endpoint {self.base_url} sent a malformed reply ({exc})", "is it OpenAI-compatible?"
                ) from exc
        usage = payload.get("usage") or {}
        self.last_usage = Usage(
            int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), time.perf_counter() - started
        )
        return str(content or "")

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        body = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
        }
        started = time.perf_counter()
        pieces = 0
        with self._request(body) as response:
            for raw in response:
                line = raw.decode("utf-8").strip()
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    break
                try:
                    text = json.loads(data)["choices"][0]["delta"].get("content")
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise LLMError(
                        f"LLM endpoint {self.base_url} sent a malformed stream chunk ({exc})",
                        "is it OpenAI-compatible?",
                    ) from exc
                if text:
                    pieces += 1
                    yield str(text)
        self.last_usage = Usage(0, pieces, time.perf_counter() - started)
