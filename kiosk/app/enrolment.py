"""Enrolment at the kiosk: good face samples from the live camera, the liveness challenge, the template."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from kiosk.app.live import LiveCamera, quality_hint
from kiosk.app.views import ChallengeView, EnrollSample, UserView
from kiosk.errors import CalibrationError, ProbeError
from kiosk.identity.face import FaceAnalysis
from kiosk.identity.gallery import IDENTICAL_MIN_COSINE, EnrollmentConflict, Gallery, Sample, build_gallery
from kiosk.identity.gallery import enroll as enroll_gallery
from kiosk.identity.names import person_name
from kiosk.identity.pad import ChallengeReport, ChallengeSession
from kiosk.memory.store import Store
from kiosk.security.audit import AuditLog

CHALLENGE_VALID_S = 300.0  # a passed enrollment challenge is good for this long (time to type a name)
SAMPLE_WAIT_S = 1.0  # longest wait for a newly analysed frame


class _PrecomputedEmbedder:
    """Enrollment samples are embeddings the verifier already computed; build_gallery still rejects outliers."""

    modality = "face"

    def __init__(self, model_sha256: str) -> None:
        self.model_sha256 = model_sha256

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        return image


def challenge_view(report: ChallengeReport) -> ChallengeView:
    return ChallengeView(report.status, report.prompt, report.message)


class Enrolment:
    def __init__(self, store: Store, live: LiveCamera, challenge: ChallengeSession, audit: AuditLog) -> None:
        self.store = store
        self.live = live
        self.challenge = challenge
        self.audit = audit

    def enrollment_sample(self) -> EnrollSample:
        verifier = self.live.verifier
        latest = verifier.latest()
        previous = latest.frame.index if latest is not None else -1
        deadline = time.monotonic() + SAMPLE_WAIT_S
        while latest is None or latest.frame.index == previous:
            if time.monotonic() >= deadline:
                return EnrollSample(False, "Waiting for the camera…")
            time.sleep(0.01)
            latest = verifier.latest()
        analysis: FaceAnalysis | None = latest.analysis
        if analysis is None:
            return EnrollSample(False, latest.error or "Waiting for the camera…")
        if analysis.second_face_in_view:
            return EnrollSample(False, "Only one person in view, please")
        if analysis.embedding is None:
            return EnrollSample(False, quality_hint(analysis) or "Look at the camera")
        return EnrollSample(True, None, analysis.embedding.copy())

    def start_challenge(self, purpose: str = "enrollment") -> ChallengeView:
        return challenge_view(self.challenge.start(purpose))

    def challenge_status(self) -> ChallengeView:
        return challenge_view(self.challenge.status())

    def enroll(self, name: str, samples: Sequence[EnrollSample]) -> UserView:
        name = person_name(name)
        if self.challenge.available:
            if not self.challenge.vouches_for("enrollment", CHALLENGE_VALID_S):
                raise ProbeError(
                    "the liveness challenge was not passed just before enrolling",
                    "start the enrollment again and follow the blink / head-turn prompt",
                )
            self.challenge.use_up()
        vectors = [s.embedding for s in samples if s.ok and s.embedding is not None]
        gallery: Gallery = build_gallery(
            _PrecomputedEmbedder(self.live.face.model_sha256),
            [Sample(f"frame {i + 1}", vector) for i, vector in enumerate(vectors)],
            duplicate_min_cosine=IDENTICAL_MIN_COSINE,  # a still person's frames are alike; a frozen feed's equal
        )
        try:
            threshold: float | None = self.live.assistant.threshold("face", gallery.model_sha256)
        except CalibrationError:
            threshold = None
        try:
            # the person at the kiosk is not told whose face theirs matched
            enrolled = enroll_gallery(self.store, name, gallery, threshold=threshold, admin=False)
        except EnrollmentConflict:
            self.audit.record("enrollment-refused", reason="matches-enrolled-person", by="kiosk")
            raise
        self.audit.record(
            "user-enrolled" if enrolled.created else "user-re-enrolled",
            user_id=enrolled.user_id,
            modality="face",
            templates=enrolled.templates,
            key_generation=self.store.key_generation(enrolled.user_id) if hasattr(self.store, "key_generation") else 0,
        )
        self.live.forget_templates()
        return UserView(enrolled.user_id, enrolled.name, self.store.count_notes(enrolled.user_id), ("face",))
