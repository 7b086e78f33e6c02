"""KeyBERT-style keywords with the sentence encoder: candidate n-grams ranked by cosine to the text,
picked with maximal marginal relevance so the keywords do not all say the same thing."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

Encode = Callable[[Sequence[str]], np.ndarray]

_STOP_TEXT = """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each even ever every few for from further get
    gets getting got had has have having he her here hers herself him himself his how i if in into is it its itself
    just know let like lot lots made make many me might more most much my myself need new no nor not now of off oh
    ok okay on once one only or other our ours ourselves out over own really same say said see she should so some
    such sure than thank thanks that the their theirs them themselves then there these they thing things think
    this those through to too totally under until up us very was way we well were what when where which while who
    whom why will with would yeah yes yet you your yours yourself yourselves hey hi hello wow great good awesome
    amazing cool glad happy love lovely nice sounds sound feel feeling felt really super so much i'm it's that's
    you're i've i'll don't can't didn't anything something everything nothing anyone someone"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]|\d+")
MAX_CANDIDATES = 48


def candidates(text: str) -> list[str]:
    """Unigrams and bigrams without stop words at their ends, in order of first appearance."""
    words = _WORD.findall(text)
    seen: dict[str, str] = {}
    for n in (1, 2):
        for start in range(len(words) - n + 1):
            gram = words[start : start + n]
            first, last = gram[0].lower(), gram[-1].lower()
            if first in STOP_WORDS or last in STOP_WORDS:
                continue
            if n == 1 and (len(first) < 3 and not first.isdigit()):
                continue
            phrase = " ".join(gram)
            seen.setdefault(phrase.lower(), phrase)
    return list(seen.values())[:MAX_CANDIDATES]


def keywords(
    text: str, encode: Encode, count: int, document: np.ndarray | None = None, diversity: float = 0.4
) -> list[str]:
    """Up to `count` keywords of `text`; `document` is its embedding if already computed."""
    phrases = candidates(text)
    if not phrases:
        return []
    doc = document if document is not None else encode([text])[0]
    return select_keywords(phrases, encode(phrases), doc, count, diversity)


def select_keywords(
    phrases: Sequence[str], vectors: np.ndarray, document: np.ndarray, count: int, diversity: float = 0.4
) -> list[str]:
    """Maximal marginal relevance over candidate phrases with their (normalised) embeddings."""
    if not phrases:
        return []
    relevance = vectors @ document
    chosen: list[int] = []
    remaining = list(range(len(phrases)))
    while remaining and len(chosen) < count:
        if chosen:
            redundancy = (vectors[remaining] @ vectors[chosen].T).max(axis=1)
        else:
            redundancy = np.zeros(len(remaining), dtype=np.float32)
        scores = (1 - diversity) * relevance[remaining] - diversity * redundancy
        best = remaining[int(np.argmax(scores))]
        chosen.append(best)
        remaining.remove(best)
    return [phrases[i] for i in chosen]
