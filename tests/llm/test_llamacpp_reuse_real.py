"""Context reuse on a real GGUF (the 135M model, fast): the saved system-prompt state and the prefill
skip prompt processing without changing a single answer token."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from kiosk.llm.llamacpp import LlamaCppLLM
from kiosk.llm.prompts import COMPACT_SYSTEM, compact_answer_messages
from kiosk.models import ModelStore

pytestmark = [pytest.mark.llm, pytest.mark.real_models]

NOTES = [
    (datetime(2023, 5, 7, 13, 0), "I adopted a grey cat called Miso from the shelter.", "Ann said this on 7 May 2023."),
    (datetime(2023, 5, 7, 13, 5), "Miso sleeps on my piano every afternoon.", "Ann said this on 7 May 2023."),
    (datetime(2023, 6, 2, 9, 30), "My sister Clara moved to Lisbon for work.", "Ann said this on 2 June 2023."),
]
QUESTION = "What is the name of my cat?"


@pytest.fixture(scope="module")
def small(model_store: ModelStore) -> Iterator[tuple[LlamaCppLLM, LlamaCppLLM]]:
    path = model_store.ensure("smollm2-135m-instruct")
    reusing = LlamaCppLLM(path, n_ctx=1024, threads=1)
    fresh = LlamaCppLLM(path, n_ctx=1024, threads=1, reuse_system_prompt=False)
    yield reusing, fresh
    reusing.close()
    fresh.close()


def _answer(llm: LlamaCppLLM, question: str = QUESTION) -> str:
    return "".join(llm.stream(compact_answer_messages(question, NOTES, "Ann"), max_tokens=12))


def _note_construction(llm: LlamaCppLLM) -> None:
    """Other work on the same context, as a note construction after every kiosk answer."""
    llm.chat([{"role": "user", "content": "Say one word."}], max_tokens=2)


def test_restored_system_prompt_gives_the_same_answer_as_a_fresh_context(small) -> None:  # type: ignore[no-untyped-def]
    reusing, fresh = small
    reusing.warm_up([COMPACT_SYSTEM])
    system = reusing.prompt_tokens(compact_answer_messages(QUESTION, NOTES, "Ann"))
    assert system is not None
    assert reusing._evaluated() == reusing._system_tokens[COMPACT_SYSTEM]  # evaluated at start-up
    expected = _answer(fresh)
    assert _answer(reusing) == expected
    _note_construction(reusing)
    assert reusing._evaluated()[: len(reusing._system_tokens[COMPACT_SYSTEM])] != reusing._system_tokens[COMPACT_SYSTEM]
    assert _answer(reusing) == expected  # restored from the saved state, same tokens out
    _note_construction(fresh)
    assert _answer(fresh) == expected


def test_prefill_evaluates_the_prompt_ahead_and_the_answer_is_unchanged(small) -> None:  # type: ignore[no-untyped-def]
    reusing, fresh = small
    question = "Where did my sister move to?"
    expected = _answer(fresh, question)
    _note_construction(reusing)
    evaluated = reusing.prefill(compact_answer_messages("Where did my", NOTES, "Ann"))
    assert evaluated > 20  # the notes were processed before the question was complete
    tokens = reusing.prompt_tokens(compact_answer_messages(question, NOTES, "Ann"))
    assert tokens is not None
    shared = sum(1 for _ in _common(reusing._evaluated(), tokens))
    assert shared > len(tokens) - 15  # only the question's last words are left to process
    assert _answer(reusing, question) == expected


def test_prefill_never_makes_an_answer_wait(small) -> None:  # type: ignore[no-untyped-def]
    reusing, _ = small
    with reusing._lock:  # the model is busy: a prefill is skipped, not queued
        assert reusing.prefill(compact_answer_messages(QUESTION, NOTES, "Ann")) == 0
    _note_construction(reusing)
    long_notes = NOTES * 6
    done: list[int] = []
    worker = threading.Thread(
        target=lambda: done.append(reusing.prefill(compact_answer_messages(QUESTION, long_notes, "Ann")))
    )
    worker.start()
    time.sleep(0.05)
    answer = _answer(reusing)  # queues for the model: the prefill stops at its next chunk
    worker.join()
    full = reusing.prompt_tokens(compact_answer_messages(QUESTION, long_notes, "Ann"))
    assert full is not None and done and done[0] < len(full) - 1
    assert answer.strip()


def _common(a: list[int], b: list[int]) -> Iterator[int]:
    for x, y in zip(a, b, strict=False):
        if x != y:
            return
        yield x


def test_prompt_lookup_drafting_answers_like_plain_decoding_and_is_keyed_apart(small, model_store: ModelStore) -> None:  # type: ignore[no-untyped-def]
    """The bench's speculative-decoding lever (bench/results/latency_50_lookup.md): drafted tokens are checked
    against the model's own greedy choice, and the answer cache keys such answers apart."""
    _, fresh = small
    drafting = LlamaCppLLM(model_store.ensure("smollm2-135m-instruct"), n_ctx=1024, threads=1, prompt_lookup_tokens=4)
    try:
        drafting.warm_up([COMPACT_SYSTEM])
        drafted, plain = _answer(drafting), _answer(fresh)
        # Drafts are checked in batches, which round differently: a near-tie late in an answer may flip
        # (1 of 50 answers in latency_50_lookup.md), so only the start is pinned.
        assert drafted.split()[:3] == plain.split()[:3] and len(drafted.split()) >= 3
        assert (
            drafting.answer_options["prompt_lookup_tokens"] == 4 and "prompt_lookup_tokens" not in fresh.answer_options
        )
    finally:
        drafting.close()
