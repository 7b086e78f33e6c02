"""The OpenAI-compatible backend against a small local HTTP server speaking the same protocol."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ConfigError, LLMError
from kiosk.llm import create_llm
from kiosk.llm.openai_compat import OpenAICompatLLM


class _Server(ThreadingHTTPServer):
    requests: list[dict[str, Any]]
    headers_seen: list[dict[str, str]]
    mode: str


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        self.server.headers_seen.append(dict(self.headers))
        if self.server.mode == "error":
            self._send(500, b'{"error": "model exploded"}', "application/json")
        elif self.server.mode == "garbage":
            self._send(200, b"<html>not json</html>", "text/html")
        elif body.get("stream"):
            chunks = [{"choices": [{"delta": {"content": piece}}]} for piece in ("Hel", "lo", "!")]
            lines = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, lines.encode(), "text/event-stream")
        else:
            content = '{"answer": 42}' if "response_format" in body else "plain reply"
            reply = {
                "choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
            }
            self._send(200, json.dumps(reply).encode(), "application/json")

    def _send(self, status: int, payload: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture()
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.requests, httpd.headers_seen, httpd.mode = [], [], "ok"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_chat_sends_openai_body_and_reads_reply(server: _Server) -> None:
    llm = OpenAICompatLLM(_url(server), model="qwen", api_key="secret")
    reply = llm.chat([{"role": "user", "content": "hi"}], max_tokens=5, temperature=0.2, stop=["\n"])
    assert reply == "plain reply"
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "qwen" and request["max_tokens"] == 5 and request["temperature"] == 0.2
    assert request["messages"] == [{"role": "user", "content": "hi"}] and request["stop"] == ["\n"]
    assert server.headers_seen[0]["Authorization"] == "Bearer secret"
    assert (llm.last_usage.prompt_tokens, llm.last_usage.completion_tokens) == (7, 3)


def test_json_schema_is_sent_as_response_format(server: _Server) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    reply = OpenAICompatLLM(_url(server)).chat([{"role": "user", "content": "q"}], max_tokens=9, json_schema=schema)
    assert json.loads(reply) == {"answer": 42}
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema


def test_stream_yields_pieces(server: _Server) -> None:
    pieces = list(OpenAICompatLLM(_url(server)).stream([{"role": "user", "content": "hi"}], max_tokens=5))
    assert pieces == ["Hel", "lo", "!"]
    assert server.requests[0]["stream"] is True


def test_server_errors_become_llm_errors(server: _Server) -> None:
    llm = OpenAICompatLLM(_url(server))
    server.mode = "error"
    with pytest.raises(LLMError, match=r"HTTP 500.*model exploded"):
        llm.chat([{"role": "user", "content": "hi"}], max_tokens=5)
    server.mode = "garbage"
    with pytest.raises(LLMError, match="malformed reply"):
        llm.chat([{"role": "user", "content": "hi"}], max_tokens=5)


def test_unreachable_and_bad_urls() -> None:
    with pytest.raises(LLMError, match="unreachable"):
        OpenAICompatLLM("http://127.0.0.1:9/v1", timeout_s=2).chat([{"role": "user", "content": "x"}], max_tokens=1)
    with pytest.raises(LLMError, match="not an http"):
        OpenAICompatLLM("ftp://example.org")


def test_factory_builds_the_configured_endpoint(server: _Server, base_config: KioskConfig) -> None:
    cfg = base_config.model_copy(deep=True)
    cfg.llm.backend = "openai"
    cfg.llm.openai.endpoint_url = None
    with pytest.raises(ConfigError, match=r"llm\.openai\.endpoint_url"):
        create_llm(cfg)
    cfg.llm.openai.endpoint_url = _url(server)
    cfg.llm.openai.endpoint_model = "big"
    llm = create_llm(cfg)
    assert isinstance(llm, OpenAICompatLLM) and llm.model == "big"
    assert llm.chat([{"role": "user", "content": "x"}], max_tokens=1) == "plain reply"
