"""Ingest: single messages and LoCoMo-format imports, including every kind of bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import MemoryConfig
from kiosk.errors import DataError
from kiosk.memory import SqliteStore
from kiosk.memory.build import ConstructionTuning, NoteBuilder
from kiosk.memory.ingest import MAX_CONTENT_CHARS, clean_content, import_conversations, parse_session_date, remember


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "memory.db")


@pytest.fixture()
def builder(store: SqliteStore, text_encoder: Any) -> NoteBuilder:
    return NoteBuilder(store, text_encoder, MemoryConfig(construction="fast"))


def _sample(sample_id: str, sessions: dict[int, tuple[str, list[Any]]]) -> dict[str, Any]:
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bob"}
    for number, (date, turns) in sessions.items():
        conversation[f"session_{number}_date_time"] = date
        conversation[f"session_{number}"] = turns
    return {"sample_id": sample_id, "conversation": conversation, "qa": []}


def _turn(dia_id: str, text: str, speaker: str = "Ann", **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def test_parse_session_date() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 1 January, 2024") == datetime(2024, 1, 1, 0, 9, tzinfo=UTC)
    assert parse_session_date("12:30 pm on 3 June, 2023").hour == 12
    for bad in ("yesterday", "25:00 pm on 8 May, 2023", "1:56 pm on 8 Maytember, 2023"):
        with pytest.raises(DataError, match="session date"):
            parse_session_date(bad)


def test_clean_content_rejects_bad_messages() -> None:
    assert clean_content("  hello \x00 ", 100) == "hello"
    assert clean_content("héllo ✓".encode(), 100) == "héllo ✓"
    with pytest.raises(DataError, match="not valid UTF-8"):
        clean_content(b"caf\xe9 au lait", 100)
    with pytest.raises(DataError, match="not valid UTF-8"):
        clean_content("bad \udce9 surrogate", 100)
    with pytest.raises(DataError, match="empty"):
        clean_content(" \n\t ", 100)
    with pytest.raises(DataError, match="1,048,576 characters, over the limit of 100"):
        clean_content("x" * (1 << 20), 100)


def test_remember_stores_for_the_user_only(store: SqliteStore, builder: NoteBuilder) -> None:
    ann = store.add_user("Ann")
    store.add_user("Bob")
    report = remember(builder, ann, "I parked on level 3.")
    assert report.note.id is not None and report.note.owner_id == ann.id
    assert report.note.source == "chat" and "Ann said this" in report.note.context
    assert store.count_notes() == 1
    for bad in (b"\xff\xfe", "", "y" * (1 << 20)):
        with pytest.raises(DataError):
            remember(builder, ann, bad)
    assert [n.content for n in store.list_notes(ann.id)] == ["I parked on level 3."]


def test_import_one_note_per_turn_with_captions_and_resume(
    tmp_path: Path, store: SqliteStore, builder: NoteBuilder
) -> None:
    data = [
        _sample(
            "conv-a",
            {
                1: (
                    "1:56 pm on 8 May, 2023",
                    [_turn("D1:1", "Hi Bob!"), _turn("D1:2", "Look", "Bob", blip_caption="a dog")],
                ),
                2: ("10:00 am on 9 May, 2023", [_turn("D2:1", "Back again.")]),
            },
        ),
        _sample("conv-b", {1: ("9:00 pm on 1 June, 2023", [_turn("D1:1", "Other conversation.")])}),
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    seen: list[tuple[int, int]] = []
    report = import_conversations(path, builder, store, progress=lambda d, t: seen.append((d, t)))
    assert (report.added, report.skipped, report.failed) == (4, 0, 0)
    assert report.conversations == {"conv-a": "conv-a", "conv-b": "conv-b"}
    assert seen[-1] == (4, 4)
    conv_a = store.user_by_name("conv-a")
    assert conv_a is not None
    notes = store.list_notes(conv_a.id)
    assert [n.source_ref for n in notes] == ["D1:1", "D1:2", "D2:1"]
    assert notes[1].content == "Look [shares a photo: a dog]"
    assert notes[1].timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert notes[2].timestamp == datetime(2023, 5, 9, 10, 0, tzinfo=UTC)
    assert "Bob said this on 8 May 2023" in notes[1].context
    again = import_conversations(path, builder, store)
    assert (again.added, again.skipped) == (0, 4)
    assert store.count_notes() == 4


def test_reply_context_quotes_the_turn_answered_within_its_session_only(
    tmp_path: Path, store: SqliteStore, text_encoder: Any
) -> None:
    data = [
        _sample(
            "conv-a",
            {
                1: (
                    "1:56 pm on 8 May, 2023",
                    [
                        _turn("D1:1", "How long have you two been married, Bob?"),
                        _turn("D1:2", "5 years already!", "Bob"),
                        _turn("D1:3", "And counting.", "Bob"),
                    ],
                ),
                2: ("10:00 am on 9 May, 2023", [_turn("D2:1", "Back again.")]),
            },
        )
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    builder = NoteBuilder(
        store, text_encoder, MemoryConfig(construction="fast"), tuning=ConstructionTuning(reply_context_words=5)
    )
    import_conversations(path, builder, store)
    owner = store.user_by_name("conv-a")
    assert owner is not None
    contexts = {n.source_ref: n.context for n in store.list_notes(owner.id)}
    assert contexts["D1:2"] == "Bob said this on 8 May 2023, 1:56 pm, replying to Ann: How long have you …"
    assert contexts["D1:1"] == "Ann said this on 8 May 2023, 1:56 pm."  # the first turn answers nothing
    assert "replying" not in contexts["D1:3"]  # the same speaker going on is not a reply
    assert "replying" not in contexts["D2:1"]  # a new session does not answer the last one


def test_import_into_one_user_prefixes_refs_and_limit_resumes(
    tmp_path: Path, store: SqliteStore, builder: NoteBuilder
) -> None:
    data = [
        _sample("conv-a", {1: ("1:56 pm on 8 May, 2023", [_turn("D1:1", "one"), _turn("D1:2", "two")])}),
        _sample("conv-b", {1: ("1:56 pm on 8 May, 2023", [_turn("D1:1", "three")])}),
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    first = import_conversations(path, builder, store, user_name="Ann", limit=2)
    assert first.added == 2
    rest = import_conversations(path, builder, store, user_name="Ann")
    assert (rest.added, rest.skipped) == (1, 2)
    ann = store.user_by_name("Ann")
    assert ann is not None
    assert store.source_refs(ann.id) == {"conv-a:D1:1", "conv-a:D1:2", "conv-b:D1:1"}


def test_malformed_items_are_reported_and_the_rest_is_imported(
    tmp_path: Path, store: SqliteStore, builder: NoteBuilder
) -> None:
    ann = store.add_user("conv-a")
    kept = remember(builder, ann, "stored before the import")
    data = [
        _sample(
            "conv-a",
            {
                1: (
                    "1:56 pm on 8 May, 2023",
                    [
                        _turn("D1:1", "fine"),
                        _turn("D1:2", ""),
                        {"speaker": "Ann", "text": "no dia id"},
                        _turn("D1:4", "z" * (MAX_CONTENT_CHARS + 1)),
                        "not a turn",
                        {"speaker": "Ann", "dia_id": "D1:6"},
                        _turn("D1:7", "also fine"),
                    ],
                ),
                2: ("someday", [_turn("D2:1", "undated")]),
                3: ("1:00 pm on 9 May, 2023", "not a list"),
            },
        ),
        {"sample_id": "conv-broken"},
        _sample("conv-c", {1: ("1:56 pm on 8 May, 2023", [_turn("D1:1", "third conversation")])}),
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = import_conversations(path, builder, store)
    errors = {e.ref: e.message for e in report.errors}
    assert report.added == 3 and report.failed == len(errors) == 8
    assert "empty" in errors["conv-a/D1:2"]
    assert "dia_id" in errors["conv-a/session_1[2]"]
    assert f"{MAX_CONTENT_CHARS + 1:,} characters" in errors["conv-a/D1:4"]
    assert "not an object" in errors["conv-a/session_1[4]"]
    assert "text" in errors["conv-a/D1:6"]
    assert "session date" in errors["conv-a/D2:1"]
    assert "not a list" in errors["conv-a/session_3"]
    assert "no 'conversation'" in errors["conv-broken"]
    assert store.get_note(kept.note.id or 0) is not None
    assert store.count_notes(ann.id) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b'[{"sample_id": ', r"not valid JSON \(line 1"),
        (b"[1, 2]", "not a list of LoCoMo samples"),
    ],
)
def test_unreadable_files_are_clear_errors(
    tmp_path: Path, store: SqliteStore, builder: NoteBuilder, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        import_conversations(path, builder, store)
    with pytest.raises(DataError, match="cannot be read"):
        import_conversations(tmp_path / "missing.json", builder, store)


@pytest.mark.real_data
def test_real_locomo_slice_imports_with_dia_ids(data_dir: Path, store: SqliteStore, builder: NoteBuilder) -> None:
    report = import_conversations(data_dir / "locomo" / "locomo10.json", builder, store, limit=12)
    assert report.added == 12 and report.failed == 0
    conv = store.user_by_name("conv-26")
    assert conv is not None
    notes = store.list_notes(conv.id)
    assert notes[0].source_ref == "D1:1" and notes[0].content.startswith("Hey Mel!")
    assert notes[0].timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert "[shares a photo: a photo of a dog walking past" in next(n.content for n in notes if n.source_ref == "D1:5")
