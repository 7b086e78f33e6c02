"""The answering prompt: each date once, speakers kept, long notes trimmed, "I don't know" asked for."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from doubles import ScriptedLLM

from kiosk.config import MemoryConfig
from kiosk.llm.prompts import (
    COMPACT_NO_MEMORY_SYSTEM,
    COMPACT_SYSTEM,
    LABEL_AUTHOR,
    MAX_NOTE_WORDS,
    NOTE_SYSTEM,
    UNKNOWN_ANSWER,
    asker_of,
    compact_answer_messages,
    compact_notes,
    note_speakers,
    notes_text,
    shared_label,
    speaker_of,
)
from kiosk.memory import SqliteStore
from kiosk.memory.build import Draft, NoteBuilder

MAY_7 = datetime(2023, 5, 7, 13, 56)
MAY_8 = datetime(2023, 5, 8, 9, 0)


def test_each_date_is_written_once_and_imported_turns_keep_their_speaker() -> None:
    text = compact_notes(
        [
            (MAY_7, "I went to a LGBTQ support group yesterday.", "Caroline said this on 7 May 2023."),
            (MAY_7, "That's great,  Caroline!", "Melanie said this on 7 May 2023."),
            (MAY_8, "Remember to call mum", ""),
        ]
    )
    assert text.splitlines() == [
        "[7 May 2023]",
        "Caroline: I went to a LGBTQ support group yesterday (6 May 2023).",
        "Melanie: That's great, Caroline!",
        "[8 May 2023]",
        "- Remember to call mum",
    ]


def test_a_written_context_sentence_is_left_out_and_long_notes_are_trimmed() -> None:
    long = " ".join(f"w{i}" for i in range(MAX_NOTE_WORDS + 20))
    text = compact_notes([(MAY_7, long, "Ann talks about her week at work and why it tired her.")])
    assert "tired" not in text
    assert text.splitlines()[1] == "- " + " ".join(f"w{i}" for i in range(MAX_NOTE_WORDS)) + " …"
    assert speaker_of("Ann talks about her week.") is None and speaker_of("Jon said this on 1 May 2023.") == "Jon"


def test_messages_ask_for_the_exact_unknown_answer_with_and_without_notes() -> None:
    system, user = compact_answer_messages("Where is Clara?", [(MAY_7, "Clara lives in Lisbon.")], "Ann")
    assert system == {"role": "system", "content": COMPACT_SYSTEM} and UNKNOWN_ANSWER in COMPACT_SYSTEM
    assert user["content"].startswith("Notes of Ann, oldest first:\n<notes>\n[7 May 2023]\n- Clara lives in Lisbon.")
    assert user["content"].endswith("Question: Where is Clara?\nAnswer:")
    system, user = compact_answer_messages("What is 2 + 2?", [])
    assert system["content"] == COMPACT_NO_MEMORY_SYSTEM and UNKNOWN_ANSWER in COMPACT_NO_MEMORY_SYSTEM
    assert user["content"] == "Question: What is 2 + 2?\nAnswer:"


def test_the_speakers_of_a_prompt_are_those_of_its_note_lines_only() -> None:
    asked = "Melanie said this on 7 May 2023, replying to Caroline: What do you do on hikes? …"
    notes = [
        (MAY_7, "How was the trail?", "Caroline said this on 7 May 2023."),
        (MAY_8, "We roast marshmallows and tell stories.", asked),
        (MAY_8, "Remember to call mum", ""),
    ]
    messages = compact_answer_messages("Who told stories: Ann?", notes, "Melanie")
    assert note_speakers(notes_text(messages)) == {"caroline", "melanie"}  # not "question" nor "notes of melanie"
    assert notes_text(messages) == messages[1]["content"]  # the user turn, never the system prompt's examples
    assert note_speakers(notes_text(compact_answer_messages("Who is Ann?", []))) == set()


@pytest.mark.parametrize(
    "context",
    [
        # LLM-built (kiosk remember's default): the model's sentence, then the speaker in brackets
        "Anna talks about her knee pain after the walk (Anna said this on 8 May 2023, 1:56 pm)",
        "Anna (the user) says her knee hurts; Tom said this on Monday too (Anna said this on 8 May 2023, 1:56 pm)",
        # fast-built, and imported turns with the turn they reply to
        "Anna said this on 8 May 2023, 1:56 pm.",
        "Anna said this on 8 May 2023, 1:56 pm, replying to Tom: How is the knee (the left one)? …",
        "Anna said this on 8 May 2023, 1:56 pm, replying to Tom: Tom said this on Monday",
    ],
)
def test_the_speaker_is_read_from_every_context_the_product_writes(context: str) -> None:
    assert speaker_of(context) == "Anna"
    messages = compact_answer_messages("How is my knee?", [(MAY_8, "My knee hurts after the walk.", context)], "Anna")
    assert note_speakers(notes_text(messages)) == {"anna"}
    assert "\nAnna: My knee hurts after the walk.\n" in messages[1]["content"]


@pytest.mark.parametrize(
    "context",
    [
        "Anna talks about her knee pain.",  # a context note evolution rewrote: no speaker left to read
        "The user said this on 8 May 2023, 1:56 pm.",  # what a note without a named speaker gets
        "",
    ],
)
def test_a_context_without_a_named_speaker_gives_none(context: str) -> None:
    assert speaker_of(context) is None


def test_notes_built_in_each_mode_keep_their_speaker(tmp_path: Path, text_encoder: Any) -> None:
    store = SqliteStore(tmp_path / "memory.db")
    anna = store.add_user("Anna").id
    attributes = {"keywords": ["knee"], "context": "Anna talks about her knee pain (left knee).", "tags": ["health"]}
    llm = ScriptedLLM({NOTE_SYSTEM: json.dumps(attributes)}, default="not json")
    llm_built = NoteBuilder(store, text_encoder, MemoryConfig(construction="llm"), llm)
    fast_built = NoteBuilder(store, text_encoder, MemoryConfig(construction="fast"))
    when = MAY_8.replace(tzinfo=UTC)
    drafts = [
        Draft(anna, "My knee hurts after the walk.", when, speaker="Anna"),
        Draft(anna, "Better today.", when, speaker="Anna", source="import", replying_to="Tom: How is the knee?"),
    ]
    notes = [llm_built.build(drafts[0]).note, fast_built.build(drafts[0]).note, fast_built.build(drafts[1]).note]
    assert notes[0].context.startswith("Anna talks about") and "replying" in notes[2].context
    assert [speaker_of(note.context) for note in notes] == ["Anna", "Anna", "Anna"]
    lines = [(note.timestamp, note.content, note.context) for note in notes]
    assert note_speakers(notes_text(compact_answer_messages("How is my knee?", lines, "Anna"))) == {"anna"}


def test_the_author_of_a_shared_label_is_read_back_from_it() -> None:
    labels = [shared_label("group:family", "Ivan"), shared_label("public", "Tony"), shared_label("public", None)]
    assert [LABEL_AUTHOR.findall(label) for label in labels] == [["Ivan"], ["Tony"], ["someone"]]


def test_the_asker_a_prompt_names_is_read_back_from_it() -> None:
    note = (datetime(2026, 10, 5, tzinfo=UTC), "Pick me up at six", "Lucía said this on 5 October 2026.")
    shared = [(note, shared_label("group:family", "Carmen"))]
    assert asker_of(notes_text(compact_answer_messages("Who?", [note], "Lucía"))) == "Lucía"
    assert asker_of(notes_text(compact_answer_messages("Who?", [note], "Mary Ann, Jr"))) == "Mary Ann, Jr"
    assert asker_of(notes_text(compact_answer_messages("Who?", [note]))) is None
    assert asker_of(notes_text(compact_answer_messages("Who?", [], "Lucía", shared))) is None
    assert asker_of(notes_text(compact_answer_messages("Who?", [], "Lucía"))) is None
