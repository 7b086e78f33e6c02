"""The default GGUF through llama-cpp-python: constrained JSON, streaming, and one real A-Mem construction."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import KioskConfig
from kiosk.llm import create_llm
from kiosk.llm.llamacpp import LlamaCppLLM
from kiosk.llm.notes_shift import notes_shift
from kiosk.llm.prompts import compact_answer_messages
from kiosk.memory import SqliteStore
from kiosk.memory.build import ConstructionTuning, Draft, NoteBuilder

pytestmark = [pytest.mark.llm, pytest.mark.real_models]


@pytest.fixture(scope="module")
def llm(base_config: KioskConfig) -> Iterator[LlamaCppLLM]:
    cfg = base_config.model_copy(deep=True)
    cfg.llm.backend = "llamacpp"
    # The CI box has 2 cores shared with other test processes; one llama.cpp thread avoids spin-wait stalls.
    cfg.llm.threads = 1
    model = create_llm(cfg)
    assert isinstance(model, LlamaCppLLM)
    yield model


def test_the_build_and_the_default_flash_attention_are_named_among_the_answer_options(llm: LlamaCppLLM) -> None:
    """The eval's answer cache keys answers by these, so a run without flash attention, or on another llama.cpp
    build, never reuses them."""
    options = llm.answer_options
    assert options["flash_attn"] is True and "AVX2" in options["llama_build"]
    assert options.keys() == {"flash_attn", "llama_build"}


def test_schema_constrained_reply_parses_and_stream_yields(llm: LlamaCppLLM) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 30}, "year": {"type": "integer"}},
        "required": ["city", "year"],
    }
    reply = llm.chat(
        [{"role": "user", "content": "In which city and year were the 2012 Summer Olympics? Answer in JSON."}],
        max_tokens=40,
        json_schema=schema,
    )
    data = json.loads(reply)
    assert set(data) == {"city", "year"} and isinstance(data["year"], int)
    assert llm.last_usage.completion_tokens > 0 and llm.last_usage.tokens_per_second > 0
    pieces = list(llm.stream([{"role": "user", "content": "Say hello."}], max_tokens=6))
    assert pieces and "".join(pieces).strip()


def test_real_construction_with_linking(
    llm: LlamaCppLLM, base_config: KioskConfig, tmp_path: Path, text_encoder: Any
) -> None:
    store = SqliteStore(tmp_path / "memory.db")
    owner = store.add_user("Caroline").id
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    builder = NoteBuilder(store, text_encoder, base_config.memory, llm, ConstructionTuning(link_candidates=1))
    builder.build(Draft(owner, "I went to an LGBTQ support group yesterday.", when, speaker="Caroline"), "fast")
    report = builder.build(
        Draft(owner, "The support group made me feel accepted and brave.", when, speaker="Caroline"), "llm"
    )
    assert report.attributes in ("parsed", "retried"), report.errors
    assert report.evolution in ("parsed", "retried", "failed")
    stored = store.get_note(report.note.id or 0)
    assert stored is not None and stored.keywords and stored.tags
    assert "8 May 2023" in stored.context
    assert report.completion_tokens > 0


def test_without_memory_it_refuses_personal_questions_and_still_answers_general_ones(llm: LlamaCppLLM) -> None:
    """The no-memory prompt, used when nobody is recognised or nothing of theirs matches (measured at scale in
    bench/results/no_memory_prompt.md)."""
    from bench.general_knowledge import answers_correctly, is_refusal
    from kiosk.eval.answering import clean_answer
    from kiosk.llm.prompts import UNKNOWN_ANSWER, compact_answer_messages

    def ask(question: str) -> str:
        return clean_answer(llm.chat(compact_answer_messages(question, []), max_tokens=24, temperature=0.0))

    for personal in ("What is my dog's name?", "What did Caroline research?"):
        assert is_refusal(ask(personal), UNKNOWN_ANSWER), personal
    general = {"What is the capital of Germany?": ("Berlin",), "In which country are the pyramids of Giza?": ("Egypt",)}
    answers = {question: ask(question) for question in general}
    assert any(answers_correctly(answers[q], accepted) for q, accepted in general.items()), answers


def test_an_answer_can_be_generated_again_without_its_first_word(llm: LlamaCppLLM) -> None:
    from kiosk.llm.prompts import compact_answer_messages

    messages = compact_answer_messages("What is the capital of France?", [])
    first = llm.chat(messages, max_tokens=8, temperature=0.0).strip()
    banned = first.split()[0].strip(".,!")
    again = llm.chat_avoiding_first_words(messages, [banned], max_tokens=8, temperature=0.0).strip()
    assert again and not again.lower().startswith(banned.lower()), (first, again)


def test_an_answer_restating_the_question_is_answered_again_from_the_notes(llm: LlamaCppLLM) -> None:
    """The 0.5B model answered this LoCoMo question with "Anna" (kiosk.llm.reask); banned from starting with the
    restated words it finds the place in the note."""
    from kiosk.eval.answering import clean_answer
    from kiosk.llm.prompts import compact_answer_messages
    from kiosk.llm.reask import reasked_answer

    question = "Where did Deborah meet her new neighbor Anna?"
    notes = [
        (datetime(2023, 2, 4, tzinfo=UTC), "I went to a yoga class in the park this morning.", "Deborah said this"),
        (datetime(2023, 2, 4, tzinfo=UTC), "I met my new neighbor Anna at yoga in the park!", "Deborah said this"),
    ]
    messages = compact_answer_messages(question, notes, "Deborah")
    again = reasked_answer(
        llm, messages, question, "Anna", max_tokens=16, temperature=0.0, concise=True, clean=clean_answer
    )
    assert again is not None and "park" in again.lower(), again


def test_an_answer_naming_only_the_other_speaker_is_answered_again_from_the_notes(llm: LlamaCppLLM) -> None:
    """kiosk.llm.reask: with every speaker's name banned as the first word, the second answer is no speaker and
    names the person of the notes the question asks about."""
    from kiosk.eval.answering import clean_answer
    from kiosk.llm.prompts import compact_answer_messages, note_speakers, notes_text
    from kiosk.llm.reask import names_only_a_speaker, reasked_answer

    question = "Who inspired Dave's passion for car engineering?"
    notes = [
        (datetime(2023, 5, 2, tzinfo=UTC), "Hey Dave, how is the garage going?", "Calvin said this on 2 May 2023."),
        (
            datetime(2023, 5, 2, tzinfo=UTC),
            "Great! My dad inspired my passion for cars: we fixed engines together when I was ten.",
            "Dave said this on 2 May 2023.",
        ),
    ]
    messages = compact_answer_messages(question, notes, "Dave")
    speakers = note_speakers(notes_text(messages))
    assert speakers == {"calvin", "dave"}
    again = reasked_answer(
        llm,
        messages,
        question,
        "Calvin",
        max_tokens=16,
        temperature=0.0,
        concise=True,
        clean=clean_answer,
        speakers=speakers,
    )
    assert again is not None and not names_only_a_speaker(again, speakers), again
    assert "dad" in again.lower() or "father" in again.lower(), again


def test_a_one_thing_answer_is_completed_from_the_notes_by_continuing_the_reply(llm: LlamaCppLLM) -> None:
    """kiosk.llm.lists: the reply "Clarinet" continued after a comma names the other instrument of the notes, the
    same whether the context held another prompt before or this one."""
    from kiosk.llm.lists import completed_list
    from kiosk.llm.prompts import compact_answer_messages

    question = "What instruments does Melanie play?"
    notes = [
        (datetime(2023, 5, 8, tzinfo=UTC), "I play clarinet in the evenings, it relaxes me.", "Melanie said this"),
        (datetime(2023, 6, 2, tzinfo=UTC), "We went camping at the lake with the kids!", "Melanie said this"),
        (
            datetime(2023, 7, 12, tzinfo=UTC),
            "I started learning violin this summer, I play it every day.",  # says it answers "play"
            "Melanie said",
        ),
    ]
    messages = compact_answer_messages(question, notes, "Melanie")
    llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=4)  # another prompt in the context first
    fresh = llm.continue_reply(messages, "Clarinet,", max_tokens=16)
    assert "violin" in fresh.lower(), fresh
    assert llm.continue_reply(messages, "Clarinet,", max_tokens=16) == fresh  # the context reused up to the comma
    listed = completed_list(
        llm, messages, question, "Clarinet", "Clarinet", max_tokens=16, temperature=0.0, concise=True
    )
    assert listed is not None and listed.lower().startswith("clarinet, violin"), listed


def test_first_word_scores_are_log_probabilities_that_the_notes_move(llm: LlamaCppLLM) -> None:
    """kiosk.llm.notes_shift reads the model's own yes/no odds: a note that rules the gloves out moves them toward
    "No" more than one that allows them."""
    question = "Can I use the latex gloves?"
    said = datetime(2026, 10, 3, 9, 0)
    ruled_out = compact_answer_messages(question, [(said, "Latex brings me out in a rash, I need the nitrile ones")])
    allowed = compact_answer_messages(question, [(said, "The latex gloves are fine for me, I have no allergies")])
    scores = llm.first_word_logprobs(ruled_out, ("Yes", "No"))
    assert set(scores) == {"Yes", "No"} and all(value <= 0.0 for value in scores.values())
    assert sum(math.exp(value) for value in scores.values()) <= 1.0 + 1e-9
    shift_ruled_out, shift_allowed = notes_shift(llm, ruled_out, question), notes_shift(llm, allowed, question)
    assert shift_ruled_out is not None and shift_allowed is not None
    assert shift_ruled_out < shift_allowed
