"""LFW verification arithmetic: pairs.txt reading and the 10-fold accuracy, EER and TAR@FAR figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.lfw_verification import Pair, read_pairs, verification_figures


def test_read_pairs_names_the_images_and_numbers_the_folds(tmp_path: Path) -> None:
    (tmp_path / "pairs.txt").write_text("2\t1\nAnn\t1\t2\nAnn\t3\tBob\t1\nBob\t1\t12\nCy\t2\tAnn\t4\n")
    assert read_pairs(tmp_path) == [
        Pair("Ann/Ann_0001.jpg", "Ann/Ann_0002.jpg", True, 0),
        Pair("Ann/Ann_0003.jpg", "Bob/Bob_0001.jpg", False, 0),
        Pair("Bob/Bob_0001.jpg", "Bob/Bob_0012.jpg", True, 1),
        Pair("Cy/Cy_0002.jpg", "Ann/Ann_0004.jpg", False, 1),
    ]


def test_read_pairs_rejects_a_file_shorter_than_its_header(tmp_path: Path) -> None:
    (tmp_path / "pairs.txt").write_text("2\t1\nAnn\t1\t2\nAnn\t3\tBob\t1\n")
    with pytest.raises(AssertionError, match="does not match its header"):
        read_pairs(tmp_path)


def test_verification_figures_test_each_fold_at_the_threshold_of_the_others() -> None:
    # Per fold: two genuine pairs, then two impostor pairs. Each fold alone is separable at its own best
    # threshold, but the other fold's threshold (0.15 from fold 1, 0.5 from fold 0) gets one pair wrong in each.
    scores = np.array([0.9, 0.8, 0.1, 0.2, 0.7, 0.3, 0.4, 0.0])
    same = [True, True, False, False] * 2
    pairs = [Pair(f"a{i}", f"b{i}", s, i // 4) for i, s in enumerate(same)]
    figures = verification_figures(scores, pairs)
    assert figures["accuracy"] == pytest.approx(0.75)
    assert figures["accuracy_std"] == pytest.approx(0.0)
    assert (figures["folds"], figures["pairs"]) == (2, 8)
    # At 0.4 one impostor of four is accepted and one genuine pair of four (0.3) rejected.
    assert figures["eer"] == pytest.approx(0.25)
    assert figures["eer_threshold"] == pytest.approx(0.4)
    # FAR 1e-3 of four impostors allows none above the threshold: just over the top impostor, 0.4.
    assert figures["tar_threshold"] == pytest.approx(0.4)
    assert figures["tar_at_far_1e-3"] == pytest.approx(0.75)
