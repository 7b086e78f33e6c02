"""Enrolment at the kiosk: good face samples from the live camera (with the palm scanner's codes beside them
when there is one, or only those on a terminal without a camera), the liveness challenge, the templates."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from kiosk.app.live import LiveCamera, quality_hint
from kiosk.app.views import ChallengeView, EnrollSample, UserView
from kiosk.errors import CalibrationError, ProbeError
from kiosk.identity.face import FaceAnalysis
from kiosk.identity.gallery import (
    IDENTICAL_MIN_COSINE,
    OUTLIER_MIN_COSINE,
    Enrollment,
    EnrollmentConflict,
    Gallery,
    Sample,
    build_gallery,
    refuse_enrolled_elsewhere,
)
from kiosk.identity.gallery import enroll as enroll_gallery
from kiosk.identity.names import person_name
from kiosk.identity.pad import ChallengeReport, ChallengeSession
from kiosk.memory.store import Store
from kiosk.security.audit import AuditLog

CHALLENGE_VALID_S = 300.0  # a passed enrollment challenge is good for this long (time to type a name)
SAMPLE_WAIT_S = 1.0  # longest wait for a newly analysed frame
PALM_BESIDE_FACE_WAIT_S = 0.3  # a face sample waits this long at most for a palm the scanner does not show yet


class _PrecomputedEmbedder:
    """Enrollment samples are embeddings the verifier already computed; build_gallery still rejects outliers."""

    def __init__(self, model_sha256: str, modality: str = "face") -> None:
        self.model_sha256 = model_sha256
        self.modality = modality

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
        """A face sample (with the scanner's palm code when it reads one now); on a terminal without a camera,
        a palm sample."""
        palm = self.live.palm
        if not self.live.has_camera:
            if palm is None:
                return EnrollSample(False, "This terminal has neither a camera nor a palm scanner")
            vector, hint = palm.next_sample(SAMPLE_WAIT_S)
            return EnrollSample(vector is not None, hint, palm=vector)
        sample = self._face_sample()
        if sample.ok and palm is not None:
            # a palm already on the scanner is worth a full frame's wait on a busy terminal; an empty scanner
            # should not slow a face-only enrolment
            wait_s = SAMPLE_WAIT_S if palm.holds_palm() else PALM_BESIDE_FACE_WAIT_S
            sample = replace(sample, palm=palm.next_sample(wait_s)[0])
        return sample

    def _face_sample(self) -> EnrollSample:
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
        faces = [s.embedding for s in samples if s.ok and s.embedding is not None]
        palms = [s.palm for s in samples if s.ok and s.palm is not None]
        palm = self._palm_gallery(palms) if palms else None
        if not self.live.has_camera:  # the palm is this terminal's only biometric
            if palm is None:
                raise ProbeError("no palm samples were taken", "hold your open palm over the scanner")
            return self._enrolled(self._enroll(name, palm), ("palm",))
        face = self._gallery(faces, self.live.face.model_sha256, "face")
        if palm is not None and not palm.sufficient:
            palm = None  # too few palm codes beside the face: enrolled by face alone
        if palm is not None:  # refused before the face is stored: a refused palm leaves nothing half-enrolled
            existing = self.store.user_by_name(name)
            self._refuse_elsewhere(palm, int(existing.id) if existing is not None else None)
        enrolled = self._enroll(name, face)
        if palm is None:
            return self._enrolled(enrolled, ("face",))
        # the face has just verified (or created) this person, so the palm beside it is theirs
        self.store.set_templates(enrolled.user_id, "palm", palm.vectors, palm.model_sha256)
        return self._enrolled(enrolled, ("face", "palm"))

    def _gallery(
        self,
        vectors: Sequence[np.ndarray],
        model_sha256: str,
        modality: str,
        *,
        min_samples: int = 3,
        outlier_min_cosine: float = OUTLIER_MIN_COSINE["face"],
    ) -> Gallery:
        return build_gallery(
            _PrecomputedEmbedder(model_sha256, modality),
            [Sample(f"frame {i + 1}", vector) for i, vector in enumerate(vectors)],
            min_samples=min_samples,
            outlier_min_cosine=outlier_min_cosine,
            duplicate_min_cosine=IDENTICAL_MIN_COSINE,  # a still person's frames are alike; a frozen feed's equal
        )

    def _palm_gallery(self, vectors: Sequence[np.ndarray]) -> Gallery:
        assert self.live.palm is not None
        return self._gallery(
            vectors,
            self.live.palm.model_sha256,
            "palm",
            min_samples=self.live.config.palm.enroll_min_samples,
            outlier_min_cosine=OUTLIER_MIN_COSINE["palm"],
        )

    def _threshold(self, gallery: Gallery) -> float | None:
        try:
            return self.live.assistant.threshold(gallery.modality, gallery.model_sha256)
        except CalibrationError:
            return None

    def _refuse_elsewhere(self, gallery: Gallery, user_id: int | None) -> None:
        try:
            refuse_enrolled_elsewhere(self.store, gallery, self._threshold(gallery), user_id, admin=False)
        except EnrollmentConflict:
            self.audit.record("enrollment-refused", reason="matches-enrolled-person", by="kiosk")
            raise

    def _enroll(self, name: str, gallery: Gallery) -> Enrollment:
        try:
            # the person at the kiosk is not told whose face or palm theirs matched
            return enroll_gallery(self.store, name, gallery, threshold=self._threshold(gallery), admin=False)
        except EnrollmentConflict:
            self.audit.record("enrollment-refused", reason="matches-enrolled-person", by="kiosk")
            raise

    def _enrolled(self, enrolled: Enrollment, modalities: tuple[str, ...]) -> UserView:
        self.audit.record(
            "user-enrolled" if enrolled.created else "user-re-enrolled",
            user_id=enrolled.user_id,
            modality="+".join(modalities),
            templates=enrolled.templates,
            key_generation=self.store.key_generation(enrolled.user_id) if hasattr(self.store, "key_generation") else 0,
        )
        self.live.forget_templates()
        return UserView(enrolled.user_id, enrolled.name, self.store.count_notes(enrolled.user_id), modalities)
