"""The household sensitivity scorer: binary and per-class precision / recall, class agreement, worst class."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.sensitive_household import LabelledNote, load_notes, split_scores, worst_class


def _note(label: str, predicted: str) -> LabelledNote:
    return LabelledNote("h", "dev", "n", "text", label, predicted)


def test_scores_count_binary_and_class_agreement_separately() -> None:
    notes = [
        _note("health", "health"),
        _note("health", "none"),
        _note("finance", "health"),  # sensitive either way: a binary hit, a class miss
        _note("none", "credentials"),
        _note("none", "none"),
    ]
    scores = split_scores(notes)
    assert scores["sensitive.tp_fp_fn"] == [2, 1, 1]
    assert scores["sensitive.precision"] == pytest.approx(2 / 3) and scores["sensitive.recall"] == pytest.approx(2 / 3)
    assert scores["class_agreement"] == pytest.approx(2 / 5)
    health = scores["classes"]["health"]
    assert (health["labelled"], health["predicted"], health["precision"], health["recall"]) == (2, 2, 0.5, 0.5)
    assert scores["classes"]["finance"]["recall"] == 0.0 and scores["classes"]["location"]["recall"] is None
    assert worst_class(scores) == "finance"  # F1 0 with one note, before credentials (no labelled notes)
    assert scores["confusion"]["finance->health"] == 1


def test_household_files_load_with_known_classes_and_splits(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(
        '[household]\nid = "a"\nsplit = "test"\n\n[[notes]]\nid = "n01"\ntext = "My PIN is 1234"\n'
        'sensitive = "credentials"\n\n[[notes]]\nid = "n02"\ntext = "Bins on Tuesday"\nsensitive = "none"\n',
        encoding="utf-8",
    )
    notes = load_notes(tmp_path)
    assert [(n.split, n.label, n.predicted) for n in notes] == [
        ("test", "credentials", "credentials"),
        ("test", "none", "none"),
    ]
    (tmp_path / "b.toml").write_text(
        '[household]\nid = "b"\nsplit = "dev"\n\n[[notes]]\nid = "n1"\ntext = "x"\nsensitive = "secret"\n'
    )
    with pytest.raises(SystemExit, match="unknown sensitive class 'secret'"):
        load_notes(tmp_path)
