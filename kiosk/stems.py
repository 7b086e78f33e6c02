"""Porter stems, cached: one stemmer for the answer form (kiosk.llm.answer_form) and LoCoMo F1 (kiosk.eval.metrics)."""

from __future__ import annotations

from functools import lru_cache

from nltk.stem import PorterStemmer

_stemmer = PorterStemmer()


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    return _stemmer.stem(word)
