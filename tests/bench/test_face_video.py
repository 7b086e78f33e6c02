"""The face-video replay of the kiosk's own probe fusion: unweighted, it must equal ProbeFuser."""

from __future__ import annotations

import numpy as np

from bench.face_video import Frame, fuse_window
from kiosk.identity.verify import ProbeFuser


def test_unweighted_replay_equals_the_kiosk_fuser() -> None:
    rng = np.random.default_rng(1)
    person = rng.standard_normal(16)
    fuser = ProbeFuser("face", "sha", fuse_frames=5, max_age_s=1.0)
    seen: list[Frame] = []
    for index in range(40):
        stamp = index / 10
        vector = None
        if index % 7 != 3:  # some frames without a usable face
            # now and then someone else's face: the fuser leaves it out when it disagrees with the newest
            base = -person if index % 11 == 5 else person
            vector = (base + 0.8 * rng.standard_normal(16)).astype(np.float32)
            vector /= np.linalg.norm(vector)
        fuser.add(vector, stamp)
        seen.append(Frame(index, stamp, vector, 1, True, float(rng.uniform(0.1, 1.0))))
        expected = fuser.fuse(stamp).probe
        replayed = fuse_window(seen, stamp, 5, 1.0, weighted=False)
        assert (expected is None) == (replayed is None)
        if expected is not None and replayed is not None:
            assert replayed.vector is not None
            np.testing.assert_allclose(replayed.vector, expected.vector, atol=1e-5)
            assert replayed.faces_in_view == expected.frames
