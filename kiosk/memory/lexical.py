"""What the lexical (FTS5 BM25) index holds for a note, and how a question becomes an FTS5 query.

The index text carries everything A-Mem adds to a note (keywords, tags, context) and the note's date in
the forms people ask with ("7 May 2023", "May 2023", "2023-05-07", "Sunday"), so that a question that
names a date or a month finds the notes of that day even when the words of the turn do not say it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""Porter stemming over unicode61 words: 'painting' and 'paints' meet 'paint'."""

MAX_QUERY_TERMS = 32
"""Longer questions keep their first 32 distinct content words (the FTS query stays bounded)."""

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "might",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
        "also",
        "ever",
        "many",
        "much",
        "kind",
        "sort",
        "type",
        "thing",
        "things",
        "get",
        "got",
        "go",
        "went",
    ]
)
"""English function words and question words: they match nearly every note and only cost time."""


def owner_token(owner_id: int) -> str:
    """The single token of a note's owner column; lexical queries must match it (the partition key)."""
    return f"o{int(owner_id)}"


def date_forms(moment: datetime) -> str:
    """'Sunday 7 May 2023, May 2023, 2023-05-07': the date as temporal questions and answers write it."""
    return f"{moment:%A} {moment.day} {moment:%B %Y}, {moment:%B %Y}, {moment:%Y-%m-%d}"


def indexed_text(content: str, keywords: Sequence[str], tags: Sequence[str], context: str, moment: datetime) -> str:
    """The body the FTS5 index tokenises for one note: content, A-Mem attributes and date forms."""
    parts = [content]
    if keywords:
        parts.append("Keywords: " + ", ".join(keywords))
    if tags:
        parts.append("Tags: " + ", ".join(tags))
    if context:
        parts.append("Context: " + context)
    parts.append("Date: " + date_forms(moment))
    return "\n".join(parts)


def query_terms(question: str) -> list[str]:
    """The question's distinct content words (lower case, first occurrence order, stopwords dropped)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(question.casefold()):
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
            if len(seen) == MAX_QUERY_TERMS:
                break
    return list(seen)


def match_expression(owner_id: int, terms: Sequence[str]) -> str:
    """FTS5 MATCH text: this owner's token AND any of the terms, each quoted (no FTS5 syntax gets through)."""
    if not terms:
        raise ValueError("a lexical query needs at least one term")
    quoted = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f'owner : "{owner_token(owner_id)}" AND body : ({quoted})'
