"""Another person's note in the third person: "I'll take Aisha's parcel in" by Dev -> "Dev will take Aisha's parcel
in".

In the answering prompt, a group or public note someone else wrote is read by a small model beside the asker's
question, which speaks in the first person too ("Who's taking my parcel in?"). The 0.5B model then answers with a
name from the wrong line: the "I" of the note is three words from its author's name at best. Written in the third
person, the note puts its author's name where the "I" was, next to what they said they would do. The asker's own
notes keep their words: there "I" is the asker, as in the question.
"""

from __future__ import annotations

import re

# Contractions and "I" + auxiliary first, so "I'm" becomes "Dev is", not "Dev'm".
_FIRST_PERSON: tuple[tuple[str, str], ...] = (
    (r"I'm|I am", "{name} is"),
    (r"I'll|I will", "{name} will"),
    (r"I've|I have", "{name} has"),
    (r"I'd", "{name} would"),
    (r"I was", "{name} was"),
    (r"I", "{name}"),
    (r"[Mm]yself", "{name}"),
    (r"[Mm]y|[Mm]ine", "{name}'s"),
    (r"[Mm]e", "{name}"),
)
_PATTERN = re.compile("|".join(f"(?P<p{index}>\\b(?:{words})\\b)" for index, (words, _) in enumerate(_FIRST_PERSON)))
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})


def straight_apostrophes(text: str) -> str:
    """`text` with its curly apostrophes straight, as people's phones type them and the patterns expect."""
    return text.translate(_APOSTROPHES)


def in_third_person(text: str, author: str) -> str:
    """`text` with its first-person words ("I", "I'm", "my", "me", ...) replaced by `author`'s name."""
    if not author.strip():
        return text

    def replace(match: re.Match[str]) -> str:
        index = int(next(group for group, value in match.groupdict().items() if value)[1:])
        return _FIRST_PERSON[index][1].format(name=author)

    return _PATTERN.sub(replace, straight_apostrophes(text))
