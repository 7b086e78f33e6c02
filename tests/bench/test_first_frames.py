"""The first-frames bench's replay of LiveCamera.with_fuller_window: which probes a question tries, and when."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_first_frames import FULL, WINDOW_S, outcome, question_chains
from bench.face_video import Frame

DIM = 16
SHARED = 0.7  # frames agree at 0.49, above the fuser's consistency floor 0.4


def fused_score(k: int) -> float:
    """The score against a template on the shared axis of his probe fused from k frames."""
    return float(SHARED / np.sqrt(SHARED**2 + (1 - SHARED**2) / k))


def frames_of_one_person(count: int, step_s: float = 0.1) -> list[Frame]:
    """His frames: a shared direction (axis 0) plus fresh noise on a new axis each frame, so fusing raises his score."""
    frames = []
    for index in range(count):
        vector = np.zeros(DIM)
        vector[0], vector[1 + index % (DIM - 1)] = SHARED, np.sqrt(1 - SHARED**2)
        frames.append(Frame(index, index * step_s, vector, 1, True, 1.0))
    return frames


def test_a_question_tries_each_fuller_probe_within_the_window_until_the_window_is_full() -> None:
    frames = frames_of_one_person(12)
    chains = question_chains(frames, {f.index for f in frames})
    first = chains[0]
    assert [tried.frames for tried in first] == list(range(1, FULL + 1))
    assert [round(tried.after_s, 1) for tried in first] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert [tried.frames for tried in chains[FULL - 1]] == [FULL]  # a full window is decided at once
    late = question_chains(frames_of_one_person(3, step_s=1.2), {0, 1, 2})[0]
    assert all(tried.after_s <= WINDOW_S for tried in late) and len(late) == 1  # the next frame comes too late


def test_the_retry_turns_a_first_frame_refusal_into_a_pass_and_records_the_wait() -> None:
    frames = frames_of_one_person(6)
    template = np.zeros((1, DIM))
    template[0, 0] = 1.0
    threshold = (fused_score(2) + fused_score(3)) / 2  # one and two frames are refused, three pass
    result = outcome(question_chains(frames, {f.index for f in frames})[:1], template, threshold)
    assert (result.asks, result.few_frames, result.refused_at_once, result.refused_with_retry) == (1, 1, 1, 0)
    assert result.waits_s == [pytest.approx(0.2)]
    never = outcome(question_chains(frames, {f.index for f in frames})[:1], template, 0.99)
    assert (never.refused_at_once, never.refused_with_retry, never.waits_s) == (1, 1, [])
