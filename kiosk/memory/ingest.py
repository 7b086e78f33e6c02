"""Ingest: one message for a user, or a whole LoCoMo-format conversation file, into notes.

Every item is checked on its own: a bad one is reported with its reference and the import goes on.
Each note is committed as it is made, so an interrupted import keeps what it stored and a rerun skips
the source references the owner already has. A source reference is unique per owner in the store, so two
imports of one file at once store each turn once (the later one counts it as skipped).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kiosk.errors import DataError, DuplicateNote, KioskError, StoreError
from kiosk.local_time import MONTHS
from kiosk.memory.build import BuildReport, Draft, Mode, NoteBuilder
from kiosk.memory.note import User, utc_now
from kiosk.memory.store import Store

log = logging.getLogger(__name__)

FAST_CHUNK = 32
MAX_CONTENT_CHARS = 8000
"""Longest message accepted as a note, in characters: a longer one is rejected, never truncated."""
"""Turns encoded together in fast mode (batched encoder passes); each note is still committed alone."""

Progress = Callable[[int, int], None]
"""progress(turns done, turns total)."""


def clean_content(raw: str | bytes, max_chars: int = MAX_CONTENT_CHARS) -> str:
    """The message as text, or a DataError saying why it cannot be a note."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"message is not valid UTF-8 (bad byte at position {exc.start})", "send UTF-8 text"
            ) from exc
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DataError(
            f"message is not valid UTF-8 (undecodable character at position {exc.start})", "send UTF-8 text"
        ) from exc
    text = raw.replace("\x00", "").strip()
    if not text:
        raise DataError("message is empty", "say something to remember")
    if len(text) > max_chars:
        raise DataError(
            f"message is {len(text):,} characters, over the limit of {max_chars:,}",
            "split it into smaller messages",
        )
    return text


def remember(
    builder: NoteBuilder,
    user: User,
    text: str | bytes,
    *,
    modality: str = "face",
    mode: Mode | None = None,
    speaker: str | None = None,
    when: datetime | None = None,
    owner_id: int | None = None,
) -> BuildReport:
    """Store one message said by `user` (who must already be verified by the caller).

    The note is `user`'s own unless `owner_id` names a group or the public owner (kiosk.memory.scopes).
    """
    content = clean_content(text)
    shared = owner_id is not None and owner_id != user.id
    draft = Draft(
        owner_id=owner_id if shared and owner_id is not None else user.id,
        content=content,
        timestamp=when or utc_now(),
        modality=modality,
        speaker=speaker or user.name,
        source="chat",
        author_id=user.id if shared else None,
    )
    return builder.build(draft, mode)


# ---- LoCoMo conversations --------------------------------------------------------------------


@dataclass
class Turn:
    conversation: str
    speaker: str
    dia_id: str
    text: str
    timestamp: datetime


@dataclass
class ItemError:
    ref: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"ref": self.ref, "error": self.message}


@dataclass
class ImportReport:
    file: str
    mode: str
    conversations: dict[str, str] = field(default_factory=dict)
    """conversation id -> user name it was stored for."""
    added: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[ItemError] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    note_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "mode": self.mode,
            "conversations": self.conversations,
            "added": self.added,
            "skipped": self.skipped,
            "failed": self.failed,
            "llm_outcomes": self.outcomes,
            "errors": [e.as_dict() for e in self.errors],
        }


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC (LoCoMo gives no zone; we read it as UTC)."""
    try:
        clock, _, day_part = text.strip().partition(" on ")
        hm, half = clock.split()
        hour, minute = (int(x) for x in hm.split(":"))
        day, month_year = day_part.split(" ", 1)
        month_name, year = month_year.replace(",", " ").split()
        if half.lower() not in ("am", "pm") or not 1 <= hour <= 12:
            raise ValueError(f"bad clock {clock!r}")
        hour = hour % 12 + (12 if half.lower() == "pm" else 0)
        return datetime(int(year), MONTHS[month_name.lower()], int(day), hour, minute, tzinfo=UTC)
    except (ValueError, KeyError) as exc:
        raise DataError(f"session date {text!r} is not like '1:56 pm on 8 May, 2023'", "fix the date") from exc


def turn_text(turn: dict[str, Any]) -> str:
    text = turn.get("text")
    if not isinstance(text, str):
        raise DataError("turn has no 'text' string", "every turn needs speaker, dia_id and text")
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shares a photo: {caption.strip()}]"
    return text


def load_conversations(path: Path) -> list[dict[str, Any]]:
    """The samples of a LoCoMo file (a list of samples, or one sample)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"conversation file {path} cannot be read ({exc.strerror})", "check the path") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"conversation file {path} is not UTF-8", "save it as UTF-8 JSON") from exc
    except RecursionError as exc:
        raise DataError(f"conversation file {path} is nested too deeply to be a LoCoMo file", "fix the JSON") from exc
    except json.JSONDecodeError as exc:
        raise DataError(
            f"conversation file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            "fix the JSON",
        ) from exc
    samples = data if isinstance(data, list) else [data]
    if not samples or not all(isinstance(s, dict) for s in samples):
        raise DataError(f"conversation file {path} is not a list of LoCoMo samples", "see the LoCoMo format")
    return samples


def conversation_turns(sample: dict[str, Any], index: int) -> tuple[str, list[Turn | ItemError]]:
    """(conversation id, its turns in order), bad turns and sessions given as ItemError in place."""
    name = str(sample.get("sample_id") or f"conversation-{index + 1}")
    conversation = sample.get("conversation")
    if not isinstance(conversation, dict):
        return name, [ItemError(name, "no 'conversation' object")]
    sessions = sorted(
        (int(key.split("_")[1]), key)
        for key in conversation
        if key.startswith("session_") and key.split("_")[1].isdigit() and key.count("_") == 1
    )
    if not sessions:
        return name, [ItemError(name, "conversation has no session_N lists")]
    items: list[Turn | ItemError] = []
    for _, key in sessions:
        turns = conversation[key]
        if not isinstance(turns, list):
            items.append(ItemError(f"{name}/{key}", "session is not a list of turns"))
            continue
        try:
            date_text = conversation.get(f"{key}_date_time")
            if not isinstance(date_text, str):
                raise DataError(f"missing '{key}_date_time'", "every session needs its date")
            when = parse_session_date(date_text)
        except DataError as exc:
            items.extend(ItemError(f"{name}/{_ref(t, key, i)}", exc.one_line()) for i, t in enumerate(turns))
            continue
        for position, turn in enumerate(turns):
            ref = f"{name}/{_ref(turn, key, position)}"
            try:
                if not isinstance(turn, dict):
                    raise DataError("turn is not an object", "every turn needs speaker, dia_id and text")
                speaker, dia_id = turn.get("speaker"), turn.get("dia_id")
                if not isinstance(speaker, str) or not speaker.strip():
                    raise DataError("turn has no 'speaker'", "every turn needs speaker, dia_id and text")
                if not isinstance(dia_id, str) or not dia_id.strip():
                    raise DataError("turn has no 'dia_id'", "every turn needs speaker, dia_id and text")
                items.append(Turn(name, speaker.strip(), dia_id.strip(), turn_text(turn), when))
            except DataError as exc:
                items.append(ItemError(ref, exc.one_line()))
    return name, items


def _ref(turn: object, session_key: str, position: int) -> str:
    if isinstance(turn, dict) and isinstance(turn.get("dia_id"), str):
        return str(turn["dia_id"])
    return f"{session_key}[{position}]"


def import_conversations(
    path: Path,
    builder: NoteBuilder,
    store: Store,
    *,
    user_name: str | None = None,
    mode: Mode | None = None,
    modality: str = "face",
    limit: int | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a LoCoMo file: one note per turn, for one named user or one user per conversation.

    Source references are the turn's dia_id; when several conversations go to one user they are
    prefixed with the conversation id so they stay unique.
    """
    samples = load_conversations(path)
    report = ImportReport(str(path), mode or builder.config.construction)
    parsed = [conversation_turns(sample, i) for i, sample in enumerate(samples)]
    prefix = user_name is not None and len(parsed) > 1
    work: list[tuple[User, str, Turn]] = []
    for name, items in parsed:
        owner = _owner(store, user_name or name)
        report.conversations[name] = owner.name
        have = store.source_refs(owner.id)
        for item in items:
            if isinstance(item, ItemError):
                report.failed += 1
                report.errors.append(item)
                continue
            ref = f"{name}:{item.dia_id}" if prefix else item.dia_id
            if ref in have:
                report.skipped += 1
                continue
            work.append((owner, ref, item))
    if limit is not None:
        work = work[:limit]
    replied = replied_turns([item for _, items in parsed for item in items])
    chosen_mode = mode or builder.config.construction
    chunk = FAST_CHUNK if chosen_mode == "fast" else 1
    done = 0
    for start in range(0, len(work), chunk):
        drafts: list[Draft] = []
        refs: list[str] = []
        for owner, ref, turn in work[start : start + chunk]:
            where = f"{turn.conversation}/{turn.dia_id}"
            try:
                content = clean_content(turn.text)
            except KioskError as exc:
                _fail(report, where, exc)
                continue
            previous = replied.get(id(turn))
            drafts.append(
                Draft(
                    owner.id,
                    content,
                    turn.timestamp,
                    modality,
                    turn.speaker,
                    "import",
                    ref,
                    replying_to=f"{previous.speaker}: {' '.join(previous.text.split())}" if previous else None,
                )
            )
            refs.append(where)
        for where, result in zip(refs, builder.build_many(drafts, chosen_mode), strict=True):
            if isinstance(result, DuplicateNote):  # another import stored this turn since `have` was read
                report.skipped += 1
                continue
            if isinstance(result, KioskError):
                _fail(report, where, result)
                continue
            report.added += 1
            assert result.note.id is not None
            report.note_ids.append(result.note.id)
            key = f"attributes.{result.attributes}"
            report.outcomes[key] = report.outcomes.get(key, 0) + 1
        done = min(len(work), start + chunk)
        if progress:
            progress(done, len(work))
    return report


def replied_turns(items: list[Turn | ItemError]) -> dict[int, Turn]:
    """For each turn (by identity), the turn before it in the same session when another speaker said it."""
    replied: dict[int, Turn] = {}
    previous: Turn | None = None
    for item in items:
        if not isinstance(item, Turn):
            previous = None
            continue
        if (
            previous is not None
            and previous.conversation == item.conversation
            and previous.timestamp == item.timestamp
            and previous.speaker != item.speaker
        ):
            replied[id(item)] = previous
        previous = item
    return replied


def _fail(report: ImportReport, where: str, exc: KioskError) -> None:
    report.failed += 1
    report.errors.append(ItemError(where, exc.one_line()))
    log.warning("import %s failed: %s", where, exc.one_line())


def _owner(store: Store, name: str) -> User:
    found = store.user_by_name(name)
    if found is not None:
        return found
    try:
        return store.add_user(name)
    except StoreError:
        raced = store.user_by_name(name)  # a concurrent import of the same file added them meanwhile
        if raced is None:
            raise
        return raced
