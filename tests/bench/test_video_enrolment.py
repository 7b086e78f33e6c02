"""The video-enrolment bench scores as the gate does: the best template per person."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_video_enrolment import person_scores


def test_person_scores_take_the_best_template_per_person() -> None:
    templates = np.eye(3, dtype=np.float32)
    owners = np.asarray([0, 0, 1])
    probe = np.asarray([[0.6, 0.8, 0.0]])
    scores = person_scores(probe, templates, owners, 3)
    assert scores[0, 0] == pytest.approx(0.8)  # max over person 0's two templates
    assert scores[0, 1] == pytest.approx(0.0)
    assert scores[0, 2] == -1.0  # no template
