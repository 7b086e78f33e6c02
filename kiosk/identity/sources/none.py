"""The camera slot of a terminal without a camera (a palm-only terminal): a source that never delivers a frame."""

from __future__ import annotations

from kiosk.identity.sources.base import SourceState, ThreadedSource

NO_CAMERA = "this terminal has no camera (capture.face_source is empty)"


class NoCamera(ThreadedSource):
    """Stands in for the face camera when none is configured; it ends at once when started."""

    def __init__(self) -> None:
        super().__init__("no camera")
        self._set_state(SourceState.ENDED, NO_CAMERA)

    def _run(self) -> None:
        self._set_state(SourceState.ENDED, NO_CAMERA)
