"""LoCoMo F1 / BLEU-1 / aggregation on hand-computed cases."""

from __future__ import annotations

import math

import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from kiosk.eval.metrics import (
    MULTI_HOP,
    SINGLE_HOP,
    TEMPORAL,
    Scored,
    aggregate,
    answer_f1,
    average_gap,
    bleu1,
    bleu_tokens,
    evidence_recall,
    normalize_answer,
    partial_f1,
    token_f1,
)


def test_normalisation_follows_locomo_order() -> None:
    # commas removed, lowercased, punctuation stripped, a/an/the/and dropped, whitespace collapsed
    assert normalize_answer("The Cat, and a  Dog!") == "cat dog"
    assert normalize_answer("An apple-pie") == "applepie"
    assert normalize_answer("Andrew and Anna") == "andrew anna"  # \b keeps "and" inside words


def test_token_f1_by_hand() -> None:
    # pred {cat, sat} vs gold {cat, sat, on, mat}: P = 1, R = 1/2, F1 = 2/3
    assert token_f1("The cat sat.", "a cat sat on the mat") == pytest.approx(2 / 3)
    assert token_f1("painting sunrises", "painted a sunrise") == 1.0  # Porter stems
    assert token_f1("7 May, 2023", "7 May 2023") == 1.0
    assert token_f1("nothing in common", "Paris") == 0.0
    assert token_f1("", "Paris") == 0.0
    # repeated tokens count as a multiset: pred {paris x3}, gold {paris}: P = 1/3, R = 1, F1 = 1/2
    assert token_f1("Paris Paris Paris", "Paris") == pytest.approx(0.5)


def test_partial_f1_for_multi_hop() -> None:
    # gold parts: London -> best 1.0, Berlin -> best 0.0; mean 0.5
    assert partial_f1("Paris, London", "London, Berlin") == pytest.approx(0.5)
    # a single prediction part against two gold parts: "hiking" matches one of them
    assert partial_f1("hiking", "hiking, painting") == pytest.approx(0.5)
    assert answer_f1("hiking", "hiking, painting", MULTI_HOP) == pytest.approx(0.5)
    # categories 2 and 4 use plain F1, where the comma is just removed: {hike, paint} vs {hike}: F1 = 2/3
    assert answer_f1("hiking, painting", "hiking", SINGLE_HOP) == pytest.approx(2 / 3)
    assert answer_f1("hiking, painting", "hiking", TEMPORAL) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        answer_f1("x", "x", 5)


def test_bleu1_by_hand() -> None:
    # hyp [the, cat] vs ref of 6 tokens: precision 1, brevity exp(1 - 6/2)
    assert bleu1("the cat", "the cat sat on the mat") == pytest.approx(math.exp(-2))
    # clipped counts: "the" x3 against one "the": 1/3, longer than the reference so no penalty
    assert bleu1("the the the", "the cat") == pytest.approx(1 / 3)
    # punctuation is its own token (NLTK tokenisation): [paris, .] vs [paris]
    assert bleu1("Paris.", "paris") == pytest.approx(0.5)
    assert bleu1("", "paris") == 0.0
    assert bleu1("london", "paris") == 0.0


@pytest.mark.parametrize(
    ("prediction", "answer"),
    [
        ("She went to the LGBTQ support group on 7 May 2023.", "7 May 2023"),
        ("I don't know", "Psychology, counseling certification"),
        ("camping, hiking and painting", "painting, camping"),
        ("2022", "2022"),
    ],
)
def test_bleu1_matches_nltk_sentence_bleu(prediction: str, answer: str) -> None:
    reference = bleu_tokens(answer)
    hypothesis = bleu_tokens(prediction)
    expected = sentence_bleu(
        [reference], hypothesis, weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1
    )
    assert bleu1(prediction, answer) == pytest.approx(expected)


def test_aggregate_macro_average_and_gap() -> None:
    owner = aggregate(
        [
            Scored(MULTI_HOP, 1.0, 0.5),
            Scored(MULTI_HOP, 0.0, 0.5),  # multi-hop: F1 50, BLEU 50
            Scored(TEMPORAL, 0.4, 0.2),  # temporal: F1 40, BLEU 20
            Scored(SINGLE_HOP, 0.9, 0.8),  # single-hop: F1 90, BLEU 80
        ]
    )
    assert owner.f1 == {MULTI_HOP: 50.0, TEMPORAL: pytest.approx(40.0), SINGLE_HOP: pytest.approx(90.0)}
    assert owner.counts == {MULTI_HOP: 2, TEMPORAL: 1, SINGLE_HOP: 1}
    # macro over categories, not over questions: (50 + 40 + 90) / 3 = 60, not (100+0+40+90)/4
    assert owner.average_f1 == pytest.approx(60.0)
    assert owner.average_bleu1 == pytest.approx(50.0)
    non_owner = aggregate([Scored(MULTI_HOP, 0.0, 0.0), Scored(TEMPORAL, 0.3, 0.3), Scored(SINGLE_HOP, 0.0, 0.0)])
    assert non_owner.average_f1 == pytest.approx(10.0)
    gap = average_gap(owner, non_owner)
    assert gap["f1"] == pytest.approx(50.0)
    assert gap["bleu1"] == pytest.approx(40.0)
    assert owner.as_dict()["average"] == {"f1": 60.0, "bleu1": 50.0}


def test_evidence_recall() -> None:
    assert evidence_recall(["D1:3", "D2:4"], ["D1:3", None, "D9:9"]) == 0.5
    assert evidence_recall(["D1:3"], []) == 0.0
    assert evidence_recall([], ["D1:3"]) is None
