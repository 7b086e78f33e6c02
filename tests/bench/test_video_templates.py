"""The video-enrolment bench's pose-diverse templates: grouping by embedding, weighted means, quality weights."""

from __future__ import annotations

import numpy as np
import pytest

from bench.video_templates import (
    MIN_WEIGHT,
    crop_sharpness,
    diverse_templates,
    pose_groups,
    quality_weight,
    verdict_weight,
    weighted_mean,
)
from kiosk.identity.quality import MIN_SHARPNESS, QualityVerdict


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def poses(seed: int = 0, per_pose: int = 4, noise: float = 0.05) -> tuple[np.ndarray, list[int]]:
    """Frames of three poses: three directions in 32-d, each frame its pose's direction plus noise."""
    rng = np.random.default_rng(seed)
    centres = np.eye(32)[:3]
    rows, labels = [], []
    for pose, centre in enumerate(centres):
        for _ in range(per_pose):
            rows.append(unit(centre + noise * rng.standard_normal(32)))
            labels.append(pose)
    order = rng.permutation(len(rows))  # frames of one pose need not be consecutive
    return np.stack(rows)[order], [labels[i] for i in order]


def test_pose_groups_find_each_pose_once() -> None:
    vectors, labels = poses()
    groups = pose_groups(vectors, 3)
    assert len(groups) == 3
    assert sorted(i for group in groups for i in group) == list(range(len(vectors)))
    for group in groups:
        assert len({labels[i] for i in group}) == 1  # one pose per group
    assert len({labels[group[0]] for group in groups}) == 3  # and every pose has one


def test_pose_groups_are_deterministic_and_keep_few_frames_apart() -> None:
    vectors, _ = poses(seed=3)
    assert pose_groups(vectors, 3) == pose_groups(vectors, 3)
    assert pose_groups(vectors[:2], 3) == [[0], [1]]


def test_diverse_templates_are_group_means_nearer_the_pose_than_any_frame() -> None:
    vectors, labels = poses(per_pose=6, noise=0.12)
    templates = diverse_templates(vectors, count=3)
    assert templates.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(templates, axis=1), 1.0, atol=1e-5)
    for template in templates:
        pose = int(np.argmax(template[:3]))
        members = vectors[[i for i, label in enumerate(labels) if label == pose]]
        # averaging a pose's frames cancels their noise: the template is closer to the pose than every frame
        assert template[pose] > members[:, pose].max()


def test_weighted_mean_follows_the_weights() -> None:
    a, b = np.eye(4, dtype=np.float32)[:2]
    plain = weighted_mean(np.stack([a, b]))
    leaning = weighted_mean(np.stack([a, b]), [3.0, 1.0])
    assert plain[0] == pytest.approx(plain[1])
    assert leaning[0] > 2.9 * leaning[1]
    with pytest.raises(ValueError):
        weighted_mean(np.stack([a, b]), [0.0, 0.0])


def test_quality_weight_prefers_sharp_big_frontal_faces() -> None:
    good = quality_weight(sharpness=200, size_px=200, turn=0.0, detector_score=0.95, min_face_px=60)
    assert good == pytest.approx(0.95)
    assert quality_weight(MIN_SHARPNESS, 200, 0.0) < good / 3  # barely sharp enough counts less
    assert quality_weight(200, 60, 0.0) < good  # a small face counts less
    assert quality_weight(200, 200, 0.4) < good  # a turned face counts less
    assert quality_weight(0, 0, 1.0, 0.0) == MIN_WEIGHT  # a frame that passed the gates still counts a little
    verdict = QualityVerdict(True, (), size_px=200, sharpness=200, turn=0.0, brightness=120)
    assert verdict_weight(verdict, 0.95) == pytest.approx(good)


def test_crop_sharpness_tells_a_blurred_crop() -> None:
    rng = np.random.default_rng(0)
    crop = rng.integers(0, 255, (120, 120, 3), dtype=np.uint8)
    blurred = np.ascontiguousarray(np.repeat(np.repeat(crop[::8, ::8], 8, axis=0), 8, axis=1))
    assert crop_sharpness(crop) > 4 * crop_sharpness(blurred)
