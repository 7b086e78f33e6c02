"""Answer cache reuse, atomic result writing, the paper-shaped table, and the gold-gap split."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kiosk.eval import answer_cache
from kiosk.eval.analysis import gold_gap
from kiosk.eval.answer_cache import AnswerCache, CachedLLM
from kiosk.eval.answering import clean_answer
from kiosk.eval.report import concise_line, flat_metrics, lists_line, restated_line, score_table, write_atomically


class CountingLLM:
    """Unit-test double: answers with the number of calls so far."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: list[dict[str, str]], **options: Any) -> str:
        self.calls += 1
        return f"answer {self.calls}"


def test_identical_prompts_run_once_per_model(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path / "answers.sqlite")
    inner = CountingLLM()
    llm = CachedLLM(inner, "sha-a", cache)
    question = [{"role": "user", "content": "When?"}]
    assert llm.chat(question, max_tokens=8) == "answer 1"
    assert llm.chat(question, max_tokens=8) == "answer 1"  # cached
    assert llm.chat(question, max_tokens=16) == "answer 2"  # another request
    other_model = CachedLLM(inner, "sha-b", cache)
    assert other_model.chat(question, max_tokens=8) == "answer 3"  # another model file
    assert inner.calls == 3 and cache.hits == 1 and cache.misses == 3
    cache.close()
    reopened = CachedLLM(CountingLLM(), "sha-a", AnswerCache(tmp_path / "answers.sqlite"))
    assert reopened.chat(question, max_tokens=8) == "answer 1"  # survives a restart


def test_flash_attention_answers_are_other_requests(tmp_path: Path) -> None:
    """Flash attention rounds differently, so its greedy answers are not the cached ones without it."""
    cache = AnswerCache(tmp_path / "answers.sqlite")
    question = [{"role": "user", "content": "When?"}]
    plain, flash = CountingLLM(), CountingLLM()
    flash.answer_options = {"flash_attn": True}  # type: ignore[attr-defined]
    assert CachedLLM(plain, "sha-a", cache).chat(question, max_tokens=8) == "answer 1"
    assert CachedLLM(flash, "sha-a", cache).chat(question, max_tokens=8) == "answer 1"  # computed, not cached
    assert CachedLLM(flash, "sha-a", cache).chat(question, max_tokens=8) == "answer 1"  # now cached
    assert plain.calls == 1 and flash.calls == 1 and cache.hits == 1
    cache.close()


class FirstWordBanningCountingLLM(CountingLLM):
    """Unit-test double that can also answer without given first words (kiosk.llm.reask)."""

    def chat_avoiding_first_words(self, messages: list[dict[str, str]], words: Any, **options: Any) -> str:
        self.calls += 1
        return f"answer {self.calls} without {' '.join(words)}"


def test_answers_avoiding_first_words_are_cached_per_banned_words(tmp_path: Path) -> None:
    llm = CachedLLM(inner := FirstWordBanningCountingLLM(), "sha-a", cache := AnswerCache(tmp_path / "answers.sqlite"))
    question = [{"role": "user", "content": "Where?"}]
    assert llm.chat(question, max_tokens=8) == "answer 1"  # the plain answer, then three without first words
    assert llm.chat_avoiding_first_words(question, ["Anna"], max_tokens=8) == "answer 2 without Anna"
    assert llm.chat_avoiding_first_words(question, ["Anna"], max_tokens=8) == "answer 2 without Anna"  # cached
    assert llm.chat_avoiding_first_words(question, ["Bob"], max_tokens=8) == "answer 3 without Bob"
    assert inner.calls == 3 and cache.hits == 1
    with pytest.raises(NotImplementedError):
        CachedLLM(CountingLLM(), "sha-a", cache).chat_avoiding_first_words(question, ["Anna"], max_tokens=8)


class ContinuingCountingLLM(CountingLLM):
    """Unit-test double that can also continue a reply it began (kiosk.llm.lists)."""

    def continue_reply(self, messages: list[dict[str, str]], start: str, **options: Any) -> str:
        self.calls += 1
        return f" more {self.calls} after {start}"


def test_continued_replies_are_cached_per_start(tmp_path: Path) -> None:
    llm = CachedLLM(inner := ContinuingCountingLLM(), "sha-a", cache := AnswerCache(tmp_path / "answers.sqlite"))
    question = [{"role": "user", "content": "Which instruments?"}]
    assert llm.chat(question, max_tokens=8) == "answer 1"  # the plain answer is not a continuation's
    assert llm.continue_reply(question, "Clarinet,", max_tokens=8) == " more 2 after Clarinet,"
    assert llm.continue_reply(question, "Clarinet,", max_tokens=8) == " more 2 after Clarinet,"  # cached
    assert llm.continue_reply(question, "Violin,", max_tokens=8) == " more 3 after Violin,"
    assert inner.calls == 3 and cache.hits == 1
    with pytest.raises(NotImplementedError):
        CachedLLM(CountingLLM(), "sha-a", cache).continue_reply(question, "Clarinet,", max_tokens=8)


class ScoringCountingLLM(CountingLLM):
    """Unit-test double that can also score a reply's first words (kiosk.llm.notes_shift)."""

    def first_word_logprobs(self, messages: list[dict[str, str]], words: Any) -> dict[str, float]:
        self.calls += 1
        return {word: -float(self.calls) for word in words}


def test_first_word_scores_are_cached_per_words(tmp_path: Path) -> None:
    llm = CachedLLM(inner := ScoringCountingLLM(), "sha-a", cache := AnswerCache(tmp_path / "answers.sqlite"))
    question = [{"role": "user", "content": "Can I?"}]
    assert llm.first_word_logprobs(question, ("Yes", "No")) == {"Yes": -1.0, "No": -1.0}
    assert llm.first_word_logprobs(question, ("Yes", "No")) == {"Yes": -1.0, "No": -1.0}  # cached
    assert llm.first_word_logprobs(question, ("Yes", "Maybe")) == {"Yes": -2.0, "Maybe": -2.0}
    assert inner.calls == 2 and cache.hits == 1
    with pytest.raises(NotImplementedError):
        CachedLLM(CountingLLM(), "sha-a", cache).first_word_logprobs(question, ("Yes", "No"))


class RecordingLLM:
    """Unit-test double with every ability and the llama.cpp backend's answer options."""

    name = "recording"
    answer_options: ClassVar[dict[str, Any]] = {"flash_attn": True, "llama_build": ["AVX2"]}

    def chat(self, messages: list[dict[str, str]], **options: Any) -> str:
        return "a"

    def chat_avoiding_first_words(self, messages: list[dict[str, str]], words: Any, **options: Any) -> str:
        return "b"

    def continue_reply(self, messages: list[dict[str, str]], start: str, **options: Any) -> str:
        return "c"


def test_request_keys_are_those_of_earlier_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers cached by earlier runs stay valid: the keys are the same for the same requests."""
    keys: list[str] = []
    original = answer_cache.request_key
    monkeypatch.setattr(answer_cache, "request_key", lambda *a, **k: keys.append(original(*a, **k)) or keys[-1])
    llm = CachedLLM(RecordingLLM(), "sha", None)
    question = [{"role": "user", "content": "When?"}]
    llm.chat(question, max_tokens=32)
    llm.chat_avoiding_first_words(question, ["Anna"], max_tokens=32)
    llm.continue_reply(question, "Clarinet,", max_tokens=24)
    assert keys == [
        "965b23b980b5aaa479f4fe01059b7a7f8e1e9967b4b9d77951197723f1f4519f",
        "5af6dc51ff99f4255978f71d44fe89aaf5c0a80f511ef783b39f3056a4da9136",
        "b3afbb2d7c353209bdee85575d6a1952c57627b44771ac4661dec921507e41a0",
    ]


def test_atomic_write_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / "locomo_face_x.json"
    write_atomically(target, "{}\n")
    assert target.read_text() == "{}\n"
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def _scores(f1: float) -> dict[str, Any]:
    per = {name: {"f1": f1, "bleu1": f1 / 2, "n": 1} for name in ("single-hop", "multi-hop", "temporal")}
    return {"scores": {"per_category": per, "average": {"f1": f1, "bleu1": f1 / 2}}}


def test_table_has_the_papers_rows_and_columns() -> None:
    table = score_table({"owner": _scores(40.0), "non_owner": _scores(5.0), "no_memory": _scores(6.0)}, 35.0)
    lines = table.splitlines()
    assert lines[0].startswith("| Condition | Single-hop F1 | Single-hop BLEU-1 | Multi-hop F1")
    assert lines[0].endswith("Avg. F1 | Avg. BLEU-1 | Avg. Gap (F1) |")
    assert lines[2] == "| Owner | 40.00 | 20.00 | 40.00 | 20.00 | 40.00 | 20.00 | 40.00 | 20.00 | 35.00 |"
    assert lines[3].startswith("| Non-owner | 5.00") and lines[3].endswith("| – |")
    assert len(lines) == 5


@pytest.mark.parametrize(
    ("step", "line", "expected"),
    [
        (
            "before_concise",
            concise_line,
            "The same replies before the restated question was cut (answer step cut-restatement): "
            "Owner 30.50 F1 (12 answers cut: 7 better, 2 worse).",
        ),
        (
            "before_restated",
            restated_line,
            "The same answers before those only restating the question (or only naming a speaker of the notes) "
            'were answered again, or without notes shown as "I don\'t know" (answer steps reask-restated, '
            "unknown-restated-without-notes, reask-speaker-names): Owner 30.50 F1 (12 replaced: 7 better, "
            "2 worse).",
        ),
        (
            "before_lists",
            lists_line,
            "The same answers before one thing named for a question asking for several was completed from the "
            "notes, a list of what is still to do lost the items a note says are done, or a medicine answer gained "
            "the medicines its note's sentence names beside it (answer steps complete-lists, strike-done-items, "
            "complete-medicines): Owner 30.50 F1 (12 changed: 7 better, 2 worse).",
        ),
    ],
)
def test_the_scores_before_an_answer_changing_step_are_reported_beside_the_answers(
    step: str, line: Callable[[dict[str, Any]], str], expected: str
) -> None:
    owner = {**_scores(32.0), step: {"f1": 30.5, "bleu1": 20.0, "better": 7, "worse": 2, "changed": 12}}
    results: dict[str, Any] = {"modality": "palm", "k": 10, "gap": {"f1": None}, "leaks": {"notes": 0}}
    results["conditions"] = {"owner": owner, "no_memory": _scores(3.0)}
    assert line(results) == expected
    flat = flat_metrics(results)
    assert flat[f"locomo.palm.owner.{step}.f1"] == 30.5 and flat["locomo.palm.owner.f1"] == 32.0
    assert f"locomo.palm.no_memory.{step}.f1" not in flat
    results["conditions"] = {"owner": _scores(32.0)}
    assert line(results) == ""


def test_gold_gap_buckets_by_owner_recall() -> None:
    answers = [
        {"key": "c#1", "owner": {"refs": ["c:D1:1"], "f1": 0.5}, "gold_evidence": {"f1": 1.0}},  # all retrieved
        {"key": "c#2", "owner": {"refs": ["d:D1:2"], "f1": 0.0}, "gold_evidence": {"f1": 1.0}},  # other user's ref
        {"key": "c#3", "owner": {"refs": ["c:D1:3"], "f1": 0.0}, "gold_evidence": {"f1": 0.5}},  # half
    ]
    evidence = {"c#1": ["D1:1"], "c#2": ["D1:2"], "c#3": ["D1:3", "D2:1"]}
    analysis = gold_gap(answers, evidence)
    assert analysis["questions"] == 3
    assert analysis["owner_f1_micro"] == 16.67 and analysis["gold_f1_micro"] == 83.33
    buckets = analysis["buckets"]
    assert buckets["all evidence retrieved"]["gap_points"] == 16.67  # (1.0 - 0.5) / 3
    assert buckets["no evidence retrieved"]["gap_points"] == 33.33
    assert buckets["part of it retrieved"]["gap_points"] == 16.67
    json.dumps(analysis)


def test_clean_answer_keeps_the_first_line_without_labels() -> None:
    assert clean_answer('Answer: "7 May 2023"\nBecause the note says so.') == "7 May 2023"
    assert clean_answer("  \n Paris \n") == "Paris"
    assert clean_answer("") == ""
