"""The face transfer bench's own arithmetic: pair scores, per-person cap, identity halves, its results section."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.bench_face_transfer import capped, goal_lines, identity_halves, pair_scores, replace_section
from kiosk.calibration.data import LabelledImages


def images(identities: list[str]) -> LabelledImages:
    return LabelledImages([Path(f"{i}.jpg") for i in range(len(identities))], identities)


def test_pair_scores_split_every_image_pair_into_genuine_and_impostor() -> None:
    vectors = np.eye(4, dtype=np.float32)
    vectors[1] = vectors[0]  # images 0 and 1 are the same face
    genuine, impostor = pair_scores(vectors, ["ann", "ann", "bob", "ann"])
    assert sorted(genuine.tolist()) == [0.0, 0.0, 1.0]  # (0,1) (0,3) (1,3)
    assert impostor.tolist() == [0.0, 0.0, 0.0]  # bob against each ann image


def test_capped_keeps_at_most_n_images_per_person_and_everyone() -> None:
    subset = capped(images(["ann"] * 10 + ["bob"] * 2 + ["cy"]), per_identity=3)
    assert sorted(subset.identities) == ["ann"] * 3 + ["bob"] * 2 + ["cy"]


def test_identity_halves_are_disjoint_stable_and_cover_every_image() -> None:
    people = [f"person_{i}" for i in range(40) for _ in range(2)]
    first, second = identity_halves(images(people))
    assert not set(first.identities) & set(second.identities)
    assert len(first.paths) + len(second.paths) == len(people)
    assert first.identity_count > 5 and second.identity_count > 5
    assert identity_halves(images(people))[0].identities == first.identities


def test_replace_section_rewrites_face_and_keeps_the_palm_section(tmp_path: Path) -> None:
    path = tmp_path / "transfer.md"
    path.write_text("# transfer\n\n## Face\n\nold face\n\n## Palm\n\npalm table\n")
    replace_section(path, "## Face", "## Face\n\nnew face\n")
    replace_section(path, "## Face", "## Face\n\nnewer face\n")
    text = path.read_text()
    assert "newer face" in text and "old face" not in text and "\nnew face" not in text
    assert text.count("## Face") == 1
    assert text.endswith("## Palm\n\npalm table\n")
    fresh = tmp_path / "fresh.md"
    replace_section(fresh, "## Face", "## Face\n\nfigures\n")
    assert "## Palm" in fresh.read_text() and "figures" in fresh.read_text()


def transfer_row(rule: str, far: float, frr: float) -> dict[str, object]:
    return {"rule": rule, "target_far": 1e-4, "fused_5": {"far": far, "frr": frr}}


def test_goal_lines_take_the_worse_direction_per_rule() -> None:
    results = {
        "facenet+sface": {
            "transfer": [
                transfer_row("strict", 0.0014, 0.005),
                transfer_row("strict", 0.0009, 0.016),
                transfer_row("fused", 0.00015, 0.027),
                transfer_row("fused", 0.00006, 0.019),
            ]
        }
    }
    strict, fused = goal_lines(results)
    assert "rule strict" in strict and "FAR 0.14 %" in strict and "**not met**" in strict
    assert "rule fused" in fused and "FRR 2.70 %" in fused and "**met**" in fused
    assert goal_lines({"w600k-mbf": results["facenet+sface"]}) == []
