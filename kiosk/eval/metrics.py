"""LoCoMo answer metrics: token F1 exactly as LoCoMo's `task_eval/evaluation.py`, BLEU-1 as A-Mem's `utils.py`.

F1 (snap-research/locomo): remove commas, lowercase, strip punctuation, drop the words a/an/the/and
(the repo's `remove_articles` includes "and"), collapse whitespace, Porter-stem every token, then
token-multiset F1. Category 1 (multi-hop) uses the repo's partial F1: the answer and the prediction are
split on commas, and the score is the mean over gold sub-answers of the best F1 against any predicted
sub-answer. Categories 2 and 4 use plain F1.

BLEU-1 (A-Mem / Bio-Memory evaluation): lowercase, NLTK word tokenisation, sentence BLEU with weights
(1, 0, 0, 0), i.e. clipped unigram precision times the brevity penalty exp(1 - r/c) when c < r.
NLTK's `word_tokenize` splits sentences with the Punkt model first (a data download); we split on
sentence-final punctuation followed by whitespace instead, which is the same on short answers.

All scores are fractions in [0, 1]; reports multiply by 100 like the paper.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nltk.tokenize import NLTKWordTokenizer

from kiosk.stems import porter_stem

MULTI_HOP, TEMPORAL, SINGLE_HOP = 1, 2, 4
CATEGORY_NAMES: dict[int, str] = {SINGLE_HOP: "single-hop", MULTI_HOP: "multi-hop", TEMPORAL: "temporal"}
CATEGORY_ORDER: tuple[int, ...] = (SINGLE_HOP, MULTI_HOP, TEMPORAL)  # the paper's table order

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_word_tokenizer = NLTKWordTokenizer()


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation, in the repo's order."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _stemmed_tokens(text: str) -> list[str]:
    return [porter_stem(word) for word in normalize_answer(text).split()]


def token_f1(prediction: str, answer: str) -> float:
    """Token-multiset F1 over normalised, stemmed tokens (LoCoMo `f1_score`)."""
    predicted = _stemmed_tokens(prediction)
    gold = _stemmed_tokens(answer)
    common = Counter(predicted) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def partial_f1(prediction: str, answer: str) -> float:
    """LoCoMo `f1` for multi-hop: mean over comma-separated gold parts of the best F1 against any predicted part."""
    predicted_parts = [part.strip() for part in prediction.split(",")]
    gold_parts = [part.strip() for part in answer.split(",")]
    best = [max(token_f1(pred, gold) for pred in predicted_parts) for gold in gold_parts]
    return sum(best) / len(best)


def answer_f1(prediction: str, answer: str, category: int) -> float:
    """The F1 LoCoMo's evaluation applies to a question of this category."""
    if category == MULTI_HOP:
        return partial_f1(prediction, answer)
    if category in (TEMPORAL, SINGLE_HOP):
        return token_f1(prediction, answer)
    raise ValueError(f"category {category} is not evaluated here (only 1, 2 and 4)")


def bleu_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for sentence in _SENTENCE_END.split(text.lower().strip()):
        tokens.extend(_word_tokenizer.tokenize(sentence))
    return tokens


def bleu1(prediction: str, answer: str) -> float:
    """Sentence BLEU with unigram weight only: clipped unigram precision x brevity penalty."""
    hypothesis = bleu_tokens(prediction)
    reference = bleu_tokens(answer)
    if not hypothesis or not reference:
        return 0.0
    clipped = sum((Counter(hypothesis) & Counter(reference)).values())
    if clipped == 0:
        return 0.0
    precision = clipped / len(hypothesis)
    c, r = len(hypothesis), len(reference)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * precision


@dataclass(frozen=True)
class Scored:
    category: int
    f1: float
    bleu1: float


def score_answer(prediction: str, answer: str, category: int) -> Scored:
    return Scored(category, answer_f1(prediction, answer, category), bleu1(prediction, answer))


@dataclass(frozen=True)
class ConditionScores:
    """Per-category means and the macro average over the three categories, in percent (like the paper)."""

    f1: dict[int, float]
    bleu1: dict[int, float]
    counts: dict[int, int]

    @property
    def average_f1(self) -> float:
        return _macro(self.f1)

    @property
    def average_bleu1(self) -> float:
        return _macro(self.bleu1)

    def as_dict(self) -> dict[str, object]:
        return {
            "per_category": {
                CATEGORY_NAMES[category]: {
                    "f1": round(self.f1[category], 2),
                    "bleu1": round(self.bleu1[category], 2),
                    "n": self.counts[category],
                }
                for category in CATEGORY_ORDER
                if category in self.counts
            },
            "average": {"f1": round(self.average_f1, 2), "bleu1": round(self.average_bleu1, 2)},
        }


def _macro(per_category: Mapping[int, float]) -> float:
    values = [per_category[category] for category in CATEGORY_ORDER if category in per_category]
    return sum(values) / len(values) if values else 0.0


def aggregate(scores: Iterable[Scored]) -> ConditionScores:
    """Mean F1/BLEU-1 per category (x100) over the scored answers; categories without answers are absent."""
    f1_sums: dict[int, float] = {}
    bleu_sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for scored in scores:
        f1_sums[scored.category] = f1_sums.get(scored.category, 0.0) + scored.f1
        bleu_sums[scored.category] = bleu_sums.get(scored.category, 0.0) + scored.bleu1
        counts[scored.category] = counts.get(scored.category, 0) + 1
    return ConditionScores(
        f1={c: 100 * f1_sums[c] / counts[c] for c in counts},
        bleu1={c: 100 * bleu_sums[c] / counts[c] for c in counts},
        counts=counts,
    )


def average_gap(owner: ConditionScores, non_owner: ConditionScores) -> dict[str, float]:
    """Avg. Gap = Owner macro average - Non-owner macro average (percentage points)."""
    return {
        "f1": owner.average_f1 - non_owner.average_f1,
        "bleu1": owner.average_bleu1 - non_owner.average_bleu1,
    }


def evidence_recall(evidence: Sequence[str], retrieved_refs: Iterable[str | None]) -> float | None:
    """Share of a question's evidence dia_ids found among the retrieved notes' source refs (None: no evidence)."""
    if not evidence:
        return None
    found = {ref for ref in retrieved_refs if ref}
    return sum(1 for dia_id in evidence if dia_id in found) / len(evidence)
