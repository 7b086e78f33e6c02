"""The household question set (bench/data/household/README.md): one TOML file per household, loaded and checked.

Every time in a file is local wall time in the household's IANA zone; it becomes an aware datetime here, so the
kiosk stamps each note and asks each question at the moment the household lived it. Any mistake in a file is a
DataError naming the file and the note or question, before a model is loaded.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kiosk.config import PROJECT_ROOT
from kiosk.errors import DataError
from kiosk.memory.sensitivity import CATEGORIES

Split = Literal["dev", "test", "holdout"]
SPLITS: tuple[Split, ...] = ("dev", "test", "holdout")
SPLIT_CHOICES = "dev, test, holdout or all"
ANSWERABLE_KINDS = ("yes-no", "either-or", "who", "list", "when", "what")
UNANSWERABLE_KINDS = ("unanswerable", "other-private")
KINDS = ANSWERABLE_KINDS + UNANSWERABLE_KINDS
SENSITIVITY = ("none", *CATEGORIES)  # a note's `sensitive` label: one of the rules' classes, or none
DEFAULT_DIR = PROJECT_ROOT / "bench" / "data" / "household"
HINT = "see bench/data/household/README.md"


@dataclass(frozen=True)
class Person:
    id: str
    name: str


@dataclass(frozen=True)
class HouseGroup:
    id: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class HouseNote:
    id: str
    by: str
    scope: str  # personal | group:<id> | public
    said_at: datetime
    text: str
    sensitive: str

    def readable_by(self, person: str, groups: dict[str, HouseGroup]) -> bool:
        """Whether `person` may read this note: public, their own personal note, or a group they belong to."""
        if self.scope == "public":
            return True
        if self.scope == "personal":
            return self.by == person
        return person in groups[self.scope.removeprefix("group:")].members


@dataclass(frozen=True)
class HouseQuestion:
    id: str
    asker: str
    asked_at: datetime
    question: str
    kind: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...]
    harmful: tuple[str, ...]

    @property
    def answerable(self) -> bool:
        return self.kind in ANSWERABLE_KINDS


@dataclass(frozen=True)
class Household:
    id: str
    split: Split
    setting: str
    timezone: str
    description: str
    people: tuple[Person, ...]
    groups: dict[str, HouseGroup]
    notes: dict[str, HouseNote]
    questions: tuple[HouseQuestion, ...]
    path: Path


def load_households(directory: Path = DEFAULT_DIR, split: str = "all") -> list[Household]:
    """Every `<id>.toml` under `directory` of `split` (dev, test, holdout or all), sorted by id."""
    if split not in (*SPLITS, "all"):
        raise DataError(f"unknown split {split!r}", f"use {SPLIT_CHOICES}")
    if not directory.is_dir():
        raise DataError(f"household directory {directory} does not exist", "give --data DIR with the *.toml files")
    households = [load_household(path) for path in sorted(directory.glob("*.toml"))]
    chosen = [h for h in households if split == "all" or h.split == split]
    if not chosen:
        raise DataError(f"no {split} household in {directory}", HINT)
    return chosen


def load_household(path: Path) -> Household:
    """One household file, checked against the README's rules."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DataError(f"{path.name}: cannot read ({exc})", HINT) from exc
    return _Reader(path).household(data)


class _Reader:
    """Builds a Household from parsed TOML; every error names the file and the entry."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zone: ZoneInfo | None = None

    def fail(self, where: str, problem: str) -> DataError:
        return DataError(f"{self.path.name}: {where}: {problem}", HINT)

    def field(self, table: dict[str, Any], key: str, where: str, kind: type = str) -> Any:
        if key not in table:
            raise self.fail(where, f"missing '{key}'")
        value = table[key]
        if not isinstance(value, kind):
            raise self.fail(where, f"'{key}' must be a {kind.__name__}, not {value!r}")
        return value

    def strings(self, table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        values = self.field(table, key, where, list)
        if not all(isinstance(v, str) for v in values):
            raise self.fail(where, f"'{key}' must be a list of strings")
        return tuple(values)

    def local_time(self, text: str, where: str) -> datetime:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError as exc:
            raise self.fail(where, f"time {text!r} is not YYYY-MM-DDTHH:MM") from exc
        if moment.tzinfo is not None:
            raise self.fail(where, f"time {text!r} has an offset; write local wall time")
        return moment.replace(tzinfo=self.zone)

    def household(self, data: dict[str, Any]) -> Household:
        head = self.field(data, "household", "[household]", dict)
        household_id = self.field(head, "id", "[household]")
        if self.path.stem != household_id:
            raise self.fail("[household]", f"id {household_id!r} is not the file name {self.path.stem!r}")
        split = self.field(head, "split", "[household]")
        if split not in SPLITS:
            raise self.fail("[household]", f"split {split!r} is not dev, test or holdout")
        zone_name = self.field(head, "timezone", "[household]")
        try:
            self.zone = ZoneInfo(zone_name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise self.fail("[household]", f"timezone {zone_name!r} is not an IANA zone") from exc
        people = self.people(data)
        groups = self.groups(data, {p.id for p in people})
        notes = self.notes(data, {p.id for p in people}, groups)
        questions = self.questions(data, {p.id for p in people}, groups, notes)
        return Household(
            household_id,
            split,
            str(head.get("setting", "")),
            zone_name,
            str(head.get("description", "")),
            people,
            groups,
            notes,
            questions,
            self.path,
        )

    def people(self, data: dict[str, Any]) -> tuple[Person, ...]:
        people: list[Person] = []
        for entry in self.field(data, "people", "[[people]]", list):
            where = f"person {entry.get('id', '?')}"
            person = Person(self.field(entry, "id", where), self.field(entry, "name", where))
            if any(p.id == person.id or p.name.casefold() == person.name.casefold() for p in people):
                raise self.fail(where, "id or name given twice")
            people.append(person)
        if not people:
            raise self.fail("[[people]]", "no person")
        return tuple(people)

    def groups(self, data: dict[str, Any], people: set[str]) -> dict[str, HouseGroup]:
        groups: dict[str, HouseGroup] = {}
        for entry in data.get("groups", []):
            where = f"group {entry.get('id', '?')}"
            group = HouseGroup(self.field(entry, "id", where), self.strings(entry, "members", where))
            if group.id in groups:
                raise self.fail(where, "id given twice")
            unknown = sorted(set(group.members) - people)
            if unknown:
                raise self.fail(where, f"members {unknown} are not people of the household")
            groups[group.id] = group
        return groups

    def notes(self, data: dict[str, Any], people: set[str], groups: dict[str, HouseGroup]) -> dict[str, HouseNote]:
        notes: dict[str, HouseNote] = {}
        for entry in self.field(data, "notes", "[[notes]]", list):
            where = f"note {entry.get('id', '?')}"
            note = HouseNote(
                self.field(entry, "id", where),
                self.field(entry, "by", where),
                self.field(entry, "scope", where),
                self.local_time(self.field(entry, "said_at", where), where),
                self.field(entry, "text", where),
                self.field(entry, "sensitive", where),
            )
            if note.id in notes:
                raise self.fail(where, "id given twice")
            if note.by not in people:
                raise self.fail(where, f"'by' {note.by!r} is not a person of the household")
            if note.scope.startswith("group:"):
                group = groups.get(note.scope.removeprefix("group:"))
                if group is None:
                    raise self.fail(where, f"scope {note.scope!r} names no group of the household")
                if note.by not in group.members:
                    raise self.fail(where, f"{note.by} is not a member of {note.scope}")
            elif note.scope not in ("personal", "public"):
                raise self.fail(where, f"scope {note.scope!r} is not personal, group:<id> or public")
            if note.sensitive not in SENSITIVITY:
                raise self.fail(where, f"sensitive {note.sensitive!r} is not one of {', '.join(SENSITIVITY)}")
            if not note.text.strip():
                raise self.fail(where, "empty text")
            notes[note.id] = note
        return notes

    def questions(
        self, data: dict[str, Any], people: set[str], groups: dict[str, HouseGroup], notes: dict[str, HouseNote]
    ) -> tuple[HouseQuestion, ...]:
        questions: list[HouseQuestion] = []
        for entry in self.field(data, "questions", "[[questions]]", list):
            where = f"question {entry.get('id', '?')}"
            question = HouseQuestion(
                self.field(entry, "id", where),
                self.field(entry, "asker", where),
                self.local_time(self.field(entry, "asked_at", where), where),
                self.field(entry, "question", where),
                self.field(entry, "kind", where),
                self.strings(entry, "answers", where),
                self.strings(entry, "evidence", where),
                self.strings(entry, "harmful", where),
            )
            if any(q.id == question.id for q in questions):
                raise self.fail(where, "id given twice")
            if question.asker not in people:
                raise self.fail(where, f"asker {question.asker!r} is not a person of the household")
            if question.kind not in KINDS:
                raise self.fail(where, f"kind {question.kind!r} is not one of {', '.join(KINDS)}")
            if question.answerable != bool(question.answers and question.evidence):
                need = "answers and evidence" if question.answerable else "no answers and no evidence"
                raise self.fail(where, f"a {question.kind} question needs {need}")
            for note_id in question.evidence:
                note = notes.get(note_id)
                if note is None:
                    raise self.fail(where, f"evidence {note_id!r} is not a note of the household")
                if note.said_at > question.asked_at:
                    raise self.fail(where, f"asked before its evidence {note_id} was said")
                if not note.readable_by(question.asker, groups):
                    raise self.fail(where, f"evidence {note_id} is not readable by {question.asker}")
            questions.append(question)
        return tuple(questions)
