"""People's names: one check for every way a person is added (CLI, the kiosk's enrolment, the store).

A name picks whose templates an enrollment writes, so two names that look alike must not be two people, and a
name that looks like an existing one must not silently become it: "Colin " (a trailing space) once re-enrolled
Colin with another face. Names are NFC-normalised (an invisible difference); everything a person could not see
or type is refused with the reason, never quietly fixed.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from kiosk.errors import DataError

MAX_NAME_CHARS = 64
# control, format (zero-width, bidi overrides), surrogate, private-use, unassigned, line and paragraph separators
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_SHOWN_CHARS = 40


class InvalidName(DataError):
    """A person's name the kiosk refuses (empty, too long, invisible characters, stray spaces, a look-alike)."""


def shown_name(name: str) -> str:
    """The name quoted for a one-line message: invisible characters as \\uXXXX, long names cut."""
    visible = "".join(
        f"\\u{ord(char):04x}" if unicodedata.category(char) in _INVISIBLE_CATEGORIES else char
        for char in name[:_SHOWN_CHARS]
    )
    return f"'{visible}{'…' if len(name) > _SHOWN_CHARS else ''}'"


def person_name(name: str) -> str:
    """The name as stored (NFC); InvalidName with the reason and a fix when it cannot be a person's name."""
    clean = unicodedata.normalize("NFC", name)
    if not clean.strip():
        raise InvalidName("a user needs a non-empty name", "give the person's name")
    if len(clean) > MAX_NAME_CHARS:
        raise InvalidName(
            f"the name {shown_name(clean)} is {len(clean)} characters long, at most {MAX_NAME_CHARS}",
            "give a shorter name",
        )
    hidden = next((char for char in clean if unicodedata.category(char) in _INVISIBLE_CATEGORIES), None)
    if hidden is not None:
        raise InvalidName(
            f"the name {shown_name(clean)} holds an invisible or control character (U+{ord(hidden):04X})",
            "type the name with letters, digits, spaces and punctuation only",
        )
    if clean != clean.strip():
        raise InvalidName(
            f"the name {shown_name(clean)} starts or ends with a space", f"write it without: '{clean.strip()}'"
        )
    if any(char.isspace() and char != " " for char in clean) or "  " in clean:
        raise InvalidName(f"the name {shown_name(clean)} holds tabs or repeated spaces", "separate words by one space")
    return clean


def name_key(name: str) -> str:
    """What two names must differ in to be two people: not case, width or compatibility forms, nor spacing."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def look_alike(name: str, existing: Iterable[str]) -> str | None:
    """An existing name that differs from `name` only in case, width or spacing (never `name` itself)."""
    key = name_key(name)
    return next((other for other in existing if other != name and name_key(other) == key), None)


def refuse_look_alike(name: str, existing: Iterable[str]) -> None:
    """InvalidName when `name` would be a second person with a look-alike of an existing person's name."""
    twin = look_alike(name, existing)
    if twin is not None:
        raise InvalidName(
            f"{shown_name(name)} differs from the enrolled {shown_name(twin)} only in case or spacing",
            f"to re-enroll that person write {shown_name(twin)}; for someone else pick a distinct name",
        )
