"""ask_structured: first-time parse, one retry naming the error, then a clean failure."""

from __future__ import annotations

from doubles import ScriptedLLM
from pydantic import BaseModel

from kiosk.llm.structured import ask_structured

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
PROMPT = [{"role": "user", "content": "give n"}]


class Reply(BaseModel):
    n: int


def test_parsed_first_time_passes_schema_and_greedy_decoding() -> None:
    llm = ScriptedLLM(default='{"n": 3}')
    result = ask_structured(llm, PROMPT, Reply, SCHEMA, max_tokens=20, what="test")
    assert result.outcome == "parsed" and result.value == Reply(n=3)
    (call,) = llm.calls
    assert call.json_schema == SCHEMA and call.temperature == 0.0 and call.max_tokens == 20


def test_retry_then_parsed() -> None:
    llm = ScriptedLLM({"give n": ['{"n": "three"}', '{"n": 3}']})
    result = ask_structured(llm, PROMPT, Reply, SCHEMA, max_tokens=20, what="test")
    assert result.outcome == "retried" and result.value == Reply(n=3)
    assert len(result.errors) == 1 and "n" in result.errors[0]


def test_failed_after_one_retry() -> None:
    llm = ScriptedLLM(default='{"n": ')
    result = ask_structured(llm, PROMPT, Reply, SCHEMA, max_tokens=20, what="test")
    assert result.outcome == "failed" and result.value is None
    assert len(llm.calls) == 2 and len(result.replies) == 2


def test_a_raw_newline_inside_a_string_is_accepted_as_the_grammar_allows_it() -> None:
    class Text(BaseModel):
        context: str

    llm = ScriptedLLM(default='{"context": "met at the\nlibrary"}')
    result = ask_structured(llm, PROMPT, Text, SCHEMA, max_tokens=20, what="test")
    assert result.outcome == "parsed" and result.value == Text(context="met at the\nlibrary")


def test_scripted_llm_records_and_streams() -> None:
    llm = ScriptedLLM([("alpha", "A reply"), ("beta", ["first", "second"])], default="fallback")
    assert llm.chat([{"role": "user", "content": "xx beta"}], max_tokens=1) == "first"
    assert llm.chat([{"role": "user", "content": "beta"}], max_tokens=1) == "second"
    assert llm.chat([{"role": "user", "content": "beta"}], max_tokens=1) == "second"
    assert llm.chat([{"role": "user", "content": "gamma"}], max_tokens=1) == "fallback"
    assert "".join(llm.stream([{"role": "user", "content": "alpha"}], max_tokens=5)) == "A reply"
    assert [c.kind for c in llm.calls] == ["chat"] * 4 + ["stream"]


def test_a_reply_cut_by_the_token_budget_is_retried_with_more_room() -> None:
    llm = ScriptedLLM({"give n": ['{"n": ' + "1 " * 30, '{"n": 3}']})
    result = ask_structured(llm, PROMPT, Reply, SCHEMA, max_tokens=20, what="test")
    assert result.outcome == "retried"
    assert [c.max_tokens for c in llm.calls] == [20, 30]


def test_an_invalid_but_short_reply_keeps_the_budget() -> None:
    llm = ScriptedLLM({"give n": ['{"n": "x"}', '{"n": 3}']})
    ask_structured(llm, PROMPT, Reply, SCHEMA, max_tokens=20, what="test")
    assert [c.max_tokens for c in llm.calls] == [20, 20]
