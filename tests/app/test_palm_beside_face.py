"""What a question is verified by on a terminal with a camera and a palm scanner (kiosk.app.palm.beside_face)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from kiosk.app.palm import beside_face, hides_memory
from kiosk.app.views import Presence, PresenceState, Verification
from kiosk.identity.gate import Identity
from kiosk.identity.liveness import LivenessVerdict
from kiosk.identity.probe import Modality, Probe

ANN = Identity(1, "Ann", 0.8, "face")
BEN = Identity(2, "Ben", 0.7, "palm")


def probe(modality: Modality, liveness: LivenessVerdict | None = None) -> Probe:
    return Probe(modality, np.ones(4, dtype=np.float32) / 2, "sha", captured_at=1.0, liveness=liveness)


def face(state: PresenceState, with_probe: bool = True, liveness: LivenessVerdict | None = None) -> Verification:
    identity = ANN if state == "recognised" else None
    return Verification(Presence(state, identity), probe("face", liveness) if with_probe else None)


def palm_says(state: PresenceState) -> tuple[list[Probe], Callable[[Probe], Verification]]:
    asked: list[Probe] = []

    def verify(palm: Probe) -> Verification:
        asked.append(palm)
        return Verification(Presence(state, BEN if state == "recognised" else None), palm)

    return asked, verify


def test_a_verified_face_keeps_the_palm_beside_it_as_the_second_proof() -> None:
    asked, verify = palm_says("recognised")
    palm = probe("palm")
    result = beside_face(face("recognised"), palm, verify)
    assert result.presence.identity == ANN and result.probe is not None and result.probe.modality == "face"
    assert result.second_probe is palm
    assert not asked  # the palm is not a second gate here: the answer path checks it for sensitive notes


def test_a_verified_face_without_a_palm_has_no_second_proof() -> None:
    result = beside_face(face("recognised"), None, palm_says("recognised")[1])
    assert result.presence.identity == ANN and result.second_probe is None


@pytest.mark.parametrize("state", ["nobody", "unclear", "no-camera"])
def test_the_palm_stands_in_when_no_face_was_seen(state: PresenceState) -> None:
    _asked, verify = palm_says("recognised")
    result = beside_face(face(state, with_probe=False), probe("palm"), verify)
    assert result.presence.identity == BEN and result.probe is not None and result.probe.modality == "palm"


def test_an_unknown_palm_without_a_face_gets_the_not_recognised_fallback() -> None:
    _asked, verify = palm_says("unknown")
    result = beside_face(face("nobody", with_probe=False), probe("palm"), verify)
    assert result.presence.state == "unknown" and result.probe is not None and result.probe.modality == "palm"


def test_an_unknown_face_is_opened_by_a_verified_palm_only() -> None:
    _asked, verify = palm_says("recognised")
    assert beside_face(face("unknown"), probe("palm"), verify).presence.identity == BEN
    _asked, verify = palm_says("unknown")
    result = beside_face(face("unknown"), probe("palm"), verify)
    assert result.presence.state == "unknown" and result.probe is not None and result.probe.modality == "face"
    unknown_face = face("unknown")
    assert beside_face(unknown_face, None, verify) is unknown_face


def test_several_people_or_a_presentation_attack_hide_memory_whatever_the_palm() -> None:
    attack = LivenessVerdict("attack", "a screen replay", blocking=True)
    assert hides_memory(face("multiple"))
    assert hides_memory(face("unknown", liveness=attack))
    assert not hides_memory(face("recognised"))
    assert not hides_memory(face("nobody", with_probe=False))
