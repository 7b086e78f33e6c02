"""The face-video enrolment section of the sensitive-threshold bench: shots, wizard samples, step-up replay, the
results section rewrite."""

from __future__ import annotations

import numpy as np

from bench.sensitive_video import (
    ClipFrame,
    evenly_spread,
    owner_segments,
    replace_section,
    step_up_probe,
    wizard_gallery,
)
from kiosk.app.live import STEP_UP_FRAMES, STEP_UP_WAIT_S
from kiosk.identity.probe import Probe


def _frame(index: int, owner: bool, vector: np.ndarray | None = None, faces: int = 1) -> ClipFrame:
    return ClipFrame(index, index / 10.0, vector, faces, owner)


def _probe(captured_at: float, frames: int) -> Probe:
    return Probe("face", np.ones(4, np.float32) / 2, "sha", captured_at, frames=frames)


def test_owner_segments_split_at_long_absences_only() -> None:
    owner = [*range(0, 5), *range(7, 10), *range(20, 23)]  # a 0.3 s gap joins, a 1.1 s gap splits
    frames = [_frame(i, i in owner) for i in range(25)]
    shots = owner_segments(frames, gap_s=0.5)
    assert [[f.index for f in shot] for shot in shots] == [[0, 1, 2, 3, 4, 7, 8, 9], [20, 21, 22]]


def test_evenly_spread_keeps_first_and_last() -> None:
    assert evenly_spread(list(range(10)), 5) == [0, 2, 4, 7, 9]
    assert evenly_spread([1, 2], 5) == [1, 2]


def test_replace_section_replaces_from_marker_or_appends() -> None:
    text = "# t\n\nLFW table\n\n## Video\n\nold video\n"
    assert replace_section(text, "## Video", "## Video\n\nnew\n") == "# t\n\nLFW table\n\n## Video\n\nnew\n"
    assert replace_section("# t\n\nLFW\n", "## Video", "## Video\n\nnew") == "# t\n\nLFW\n\n## Video\n\nnew\n"


def test_step_up_waits_for_frames_after_the_ask_then_takes_the_full_window() -> None:
    stale, short, full, later = _probe(0.9, 10), _probe(1.1, 6), _probe(1.5, STEP_UP_FRAMES), _probe(1.6, 10)
    results = [(0.9, stale), (1.1, short), (1.5, full), (1.6, later)]
    assert step_up_probe(results, asked_at=1.0) is full  # not the stale one from before the ask


def test_step_up_takes_the_last_fresh_probe_at_the_deadline() -> None:
    short, late = _probe(1.2, 4), _probe(1.0 + STEP_UP_WAIT_S + 0.1, STEP_UP_FRAMES)
    assert step_up_probe([(1.2, short), (late.captured_at, late)], asked_at=1.0) is short
    assert step_up_probe([(0.5, _probe(0.5, 10))], asked_at=1.0) is None
    # the frames after the ask show no face: the window's newest face predates the ask, so no step-up probe
    assert step_up_probe([(1.1, _probe(0.9, STEP_UP_FRAMES))], asked_at=1.0) is None


def test_wizard_gallery_uses_the_wizards_sample_count_and_the_outlier_rule() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=64)
    him = [base + 0.3 * rng.normal(size=64) for _ in range(9)]
    someone_else = rng.normal(size=64)
    shot = [_frame(i, True, v / np.linalg.norm(v)) for i, v in enumerate(him)]
    shot[4] = _frame(4, True, someone_else / np.linalg.norm(someone_else))  # an evenly spread pick
    shot.append(_frame(9, True, None))  # no usable face: never a sample
    gallery = wizard_gallery(shot, "sha")
    assert len(gallery.outcomes) == 5
    assert len(gallery.vectors) == 4 and "outlier" in gallery.rejected[0].reason
