"""Enrollment: several images per person become templates, after outliers are rejected with a reason.

Works for any embedder with `modality`, `model_sha256` and `embed_image(image) -> vector` (face and palm).
Each sample is embedded on its own (a sample the embedder refuses is rejected with the embedder's reason);
the remaining embeddings are compared with their medoid, the sample most similar to all others, and those
below `outlier_min_cosine` are rejected as probably someone else or a bad crop. Enrollment needs at least
`min_samples` accepted samples. Templates replace the user's earlier templates of that modality; notes are
never touched.

Poisoning is refused: a sample showing two faces (`enrollment_embed`), a sample given twice (the same pixels, or
an embedding within `DUPLICATE_MIN_COSINE` of an earlier sample, so one photo cannot count as several), a name
that is invalid or a look-alike of an enrolled one (`kiosk.identity.names`), and templates that already verify
as another enrolled person at the active tau (`enroll`): otherwise that person's probes would find two owners.
At the kiosk (no admin) an enrolled name is renewed only from a face that matches its templates.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kiosk.errors import DataError, KioskError, ProbeError, StoreError
from kiosk.identity.image_files import ImageTooLarge, check_image_size, read_image_file
from kiosk.identity.names import person_name
from kiosk.identity.sources import IMAGE_SUFFIXES, list_images
from kiosk.identity.verify import l2_normalise

log = logging.getLogger(__name__)

# Samples below this cosine to the samples' medoid are rejected, per modality (palm: Tongji's FAR 1e-3 ~ 0.30).
OUTLIER_MIN_COSINE: dict[str, float] = {"face": 0.5, "palm": 0.3}
MAX_TEMPLATES = 10  # templates kept per user and modality, evenly spread over the samples
# Two samples closer than this are one photo given twice: a re-encoded or 2-px-shifted LFW crop scores
# 0.989-0.998 with the fused face encoder, two photos of one person 0.45-0.71, video frames 0.17 s apart <= 0.92.
DUPLICATE_MIN_COSINE = 0.97
# Live camera frames of a still person are near-duplicates by nature: there only a frozen feed's copies are.
IDENTICAL_MIN_COSINE = 0.9999


class Embedder(Protocol):
    """The part of a face or palm embedder that enrollment uses."""

    @property
    def modality(self) -> str: ...
    @property
    def model_sha256(self) -> str: ...
    def embed_image(self, image: np.ndarray) -> np.ndarray: ...


class EnrollStore(Protocol):
    """The part of the memory store that enrollment uses (SqliteStore fits)."""

    def add_user(self, name: str) -> Any: ...
    def get_user(self, user_id: int) -> Any: ...
    def user_by_name(self, name: str) -> Any: ...
    def delete_user(self, user_id: int) -> None: ...
    def templates(self, modality: str | None = None) -> list[Any]: ...
    def set_templates(self, user_id: int, modality: str, vectors: np.ndarray, model_sha256: str) -> list[Any]: ...


@dataclass(frozen=True)
class Sample:
    """One enrollment input: a label for reports (file name, 'clip.mp4 frame 40') and its decoded image."""

    label: str
    image: np.ndarray | None  # None when the file could not be decoded
    problem: str | None = None  # why `image` is None


@dataclass(frozen=True)
class SampleOutcome:
    label: str
    accepted: bool
    reason: str  # "accepted", the embedder's rejection, or the outlier test that failed
    cosine_to_medoid: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "accepted": self.accepted,
            "reason": self.reason,
            "cosine_to_medoid": self.cosine_to_medoid,
        }


@dataclass(frozen=True)
class Gallery:
    """The templates an enrollment would store, and what happened to every sample."""

    modality: str
    model_sha256: str
    vectors: np.ndarray  # (n, d) float32, L2-normalised, accepted samples only (n may be 0)
    outcomes: list[SampleOutcome]
    min_samples: int
    outlier_min_cosine: float

    @property
    def accepted(self) -> list[SampleOutcome]:
        return [o for o in self.outcomes if o.accepted]

    @property
    def rejected(self) -> list[SampleOutcome]:
        return [o for o in self.outcomes if not o.accepted]

    @property
    def sufficient(self) -> bool:
        return len(self.vectors) >= self.min_samples

    @property
    def problem(self) -> str | None:
        if self.sufficient:
            return None
        return (
            f"only {len(self.vectors)} of {len(self.outcomes)} {self.modality} samples are usable, "
            f"{self.min_samples} needed"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "modality": self.modality,
            "model_sha256": self.model_sha256,
            "accepted": len(self.vectors),
            "rejected": len(self.rejected),
            "min_samples": self.min_samples,
            "outlier_min_cosine": self.outlier_min_cosine,
            "samples": [o.as_dict() for o in self.outcomes],
        }


def medoid_index(vectors: np.ndarray) -> int:
    """Index of the unit vector with the highest summed cosine to all the others."""
    similarities = vectors @ vectors.T
    return int(np.argmax(similarities.sum(axis=1) - np.diag(similarities)))


@dataclass(frozen=True)
class EmbeddedSample:
    """A sample after embedding: its unit vector, or why there is none."""

    label: str
    vector: np.ndarray | None
    problem: str | None = None


def embed_samples(embed: Callable[[np.ndarray], np.ndarray], samples: Iterable[Sample]) -> list[EmbeddedSample]:
    """Embed each sample on its own; a refusal or failure becomes that sample's reason, never an abort."""
    embedded: list[EmbeddedSample] = []
    seen: dict[str, str] = {}  # digest of the pixels -> label of the first sample with them
    for sample in samples:
        if sample.image is None:
            embedded.append(EmbeddedSample(sample.label, None, sample.problem or "unreadable image"))
            continue
        digest = _pixel_digest(sample.image)
        if digest in seen:
            embedded.append(EmbeddedSample(sample.label, None, f"duplicate of {seen[digest]} (the same image)"))
            continue
        seen[digest] = sample.label
        try:
            embedded.append(EmbeddedSample(sample.label, l2_normalise(embed(sample.image))))
        except KioskError as exc:
            embedded.append(EmbeddedSample(sample.label, None, exc.message))
        except Exception as exc:  # one sample must not abort enrollment; the reason is reported and logged
            log.exception("embedding %s failed", sample.label)
            embedded.append(EmbeddedSample(sample.label, None, f"embedding failed ({type(exc).__name__})"))
    return embedded


def _pixel_digest(image: np.ndarray) -> str:
    array = np.ascontiguousarray(image)
    return hashlib.sha256(f"{array.shape}{array.dtype}".encode() + array.tobytes()).hexdigest()


def build_gallery(
    embedder: Embedder,
    samples: Iterable[Sample],
    *,
    min_samples: int = 3,
    outlier_min_cosine: float = OUTLIER_MIN_COSINE["face"],
    max_templates: int = MAX_TEMPLATES,
    embed: Callable[[np.ndarray], np.ndarray] | None = None,
    duplicate_min_cosine: float = DUPLICATE_MIN_COSINE,
) -> Gallery:
    """Embed every sample, reject failures and outliers, keep at most `max_templates` accepted vectors.

    `embed` replaces `embedder.embed_image`, e.g. `embed_crop` / `embed_roi` for pre-cropped input.
    """
    return select_templates(
        embedder.modality,
        embedder.model_sha256,
        embed_samples(embed or embedder.embed_image, samples),
        min_samples=min_samples,
        outlier_min_cosine=outlier_min_cosine,
        max_templates=max_templates,
        duplicate_min_cosine=duplicate_min_cosine,
    )


def select_templates(
    modality: str,
    model_sha256: str,
    embedded: Sequence[EmbeddedSample],
    *,
    min_samples: int = 3,
    outlier_min_cosine: float = OUTLIER_MIN_COSINE["face"],
    max_templates: int = MAX_TEMPLATES,
    duplicate_min_cosine: float = DUPLICATE_MIN_COSINE,
) -> Gallery:
    """Duplicate and outlier rejection and template choice on already-embedded samples.

    Lets a caller that already holds embeddings (e.g. the live verifier's recent good frames, see
    `ProbeFuser.observations()`) enroll without running the model again.
    """
    outcomes: dict[int, SampleOutcome] = {}
    positions: list[int] = []
    vectors: list[np.ndarray] = []
    for position, sample in enumerate(embedded):
        if sample.vector is None:
            outcomes[position] = SampleOutcome(sample.label, False, sample.problem or "no embedding")
            continue
        vector = l2_normalise(sample.vector)
        twin = next((i for i, earlier in enumerate(vectors) if float(earlier @ vector) >= duplicate_min_cosine), None)
        if twin is not None:
            cosine = float(vectors[twin] @ vector)
            reason = f"duplicate of {embedded[positions[twin]].label} (cosine {cosine:.3f})"
            outcomes[position] = SampleOutcome(sample.label, False, reason, None)
            continue
        positions.append(position)
        vectors.append(vector)
    order = [sample.label for sample in embedded]
    kept: list[np.ndarray] = []
    if len(vectors) == 1:
        outcomes[positions[0]] = SampleOutcome(order[positions[0]], True, "accepted (single sample)", 1.0)
        kept = vectors
    elif vectors:
        matrix = np.stack(vectors)
        centre = matrix[medoid_index(matrix)]
        cosines = matrix @ centre
        if len(vectors) == 2 and cosines.min() < outlier_min_cosine:
            reason = f"the two usable samples disagree (cosine {float(matrix[0] @ matrix[1]):.2f})"
            for position, cosine in zip(positions, cosines, strict=True):
                outcomes[position] = SampleOutcome(order[position], False, reason, float(cosine))
        else:
            for position, vector, cosine in zip(positions, vectors, cosines, strict=True):
                if cosine >= outlier_min_cosine:
                    outcomes[position] = SampleOutcome(order[position], True, "accepted", float(cosine))
                    kept.append(vector)
                else:
                    reason = (
                        f"outlier: cosine {float(cosine):.2f} to the medoid < {outlier_min_cosine:.2f} "
                        "(another person or a bad crop?)"
                    )
                    outcomes[position] = SampleOutcome(order[position], False, reason, float(cosine))
    if len(kept) > max_templates:
        # evenly spread over the input order keeps pose/light variety instead of near-duplicate frames
        chosen = set(np.linspace(0, len(kept) - 1, max_templates).round().astype(int).tolist())
        accepted_positions = [p for p in positions if outcomes[p].accepted]
        for rank, position in enumerate(accepted_positions):
            if rank not in chosen:
                old = outcomes[position]
                outcomes[position] = SampleOutcome(
                    old.label, False, f"accepted but not kept (max {max_templates} templates)", old.cosine_to_medoid
                )
        kept = [vector for rank, vector in enumerate(kept) if rank in chosen]
    dimension = vectors[0].shape[0] if vectors else 0
    matrix_kept = np.stack(kept).astype(np.float32) if kept else np.zeros((0, dimension), np.float32)
    return Gallery(
        modality=modality,
        model_sha256=model_sha256,
        vectors=matrix_kept,
        outcomes=[outcomes[i] for i in range(len(order))],
        min_samples=min_samples,
        outlier_min_cosine=outlier_min_cosine,
    )


@dataclass(frozen=True)
class Enrollment:
    user_id: int
    name: str
    created: bool  # False when an existing user's templates were replaced
    templates: int
    gallery: Gallery

    def as_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "name": self.name,
            "created": self.created,
            "templates": self.templates,
            **self.gallery.as_dict(),
        }


class EnrollmentConflict(ProbeError):
    """The new templates already verify as another enrolled person: storing them would give that face two owners."""


def enrolled_scores(store: EnrollStore, gallery: Gallery) -> dict[int, float]:
    """Each enrolled person's score against the gallery, as the gate scores: the maximum over both sides'
    templates; only templates of the gallery's encoder (another encoder's scores are not comparable)."""
    best: dict[int, float] = {}
    if gallery.vectors.shape[0] == 0:
        return best
    for template in store.templates(gallery.modality):
        if template.model_sha256 != gallery.model_sha256:
            continue
        score = float(np.max(gallery.vectors @ l2_normalise(np.asarray(template.vector, np.float32))))
        best[int(template.user_id)] = max(score, best.get(int(template.user_id), -1.0))
    return best


def _no_calibration(gallery: Gallery, compared: int) -> EnrollmentConflict:
    return EnrollmentConflict(
        f"cannot check the new {gallery.modality} templates against {compared} enrolled people: no usable "
        f"{gallery.modality} calibration; nothing was stored",
        f"check gate.{gallery.modality}_calibration or run `kiosk calibrate {gallery.modality}`",
    )


def refuse_enrolled_elsewhere(
    store: EnrollStore, gallery: Gallery, threshold: float | None, except_user_id: int | None, admin: bool
) -> None:
    """EnrollmentConflict when the gallery verifies (score >= tau) as an enrolled person other than the one being
    (re-)enrolled; an admin is told who, the person at the kiosk is not."""
    scores = {user: score for user, score in enrolled_scores(store, gallery).items() if user != except_user_id}
    if not scores:
        return
    if threshold is None:
        raise _no_calibration(gallery, len(scores))
    user_id = max(scores, key=lambda user: scores[user])
    if scores[user_id] < threshold:
        return
    if admin:
        other = store.get_user(user_id)
        who = f" ({other.name})" if other is not None else ""
        raise EnrollmentConflict(
            f"these {gallery.modality} samples match an enrolled person{who} (score {scores[user_id]:.2f} >= tau "
            f"{threshold:.2f}); nothing was stored",
            "enroll each person from images of that person alone; to renew an enrolled person's templates, "
            "enroll them under their own name",
        )
    raise EnrollmentConflict(
        f"this {gallery.modality} is already enrolled under another name; nothing was stored", "ask an admin"
    )


def refuse_unverified_renewal(store: EnrollStore, gallery: Gallery, threshold: float | None, user_id: int) -> None:
    """At the kiosk (no admin) an enrolled name is renewed only by the face it already has: otherwise anyone who
    types "Colin" would replace Colin's templates and read his notes. A person without comparable templates
    (revoked, or enrolled with another encoder) is renewed by an admin."""
    score = enrolled_scores(store, gallery).get(user_id)
    if score is not None and threshold is None:
        raise _no_calibration(gallery, 1)
    if score is None or threshold is None or score < threshold:
        raise EnrollmentConflict(
            f"the name is taken by an enrolled person this {gallery.modality} does not match; nothing was stored",
            "pick another name, or ask an admin to renew that person's templates",
        )


def enroll(
    store: EnrollStore, name: str, gallery: Gallery, *, threshold: float | None, admin: bool = True
) -> Enrollment:
    """Store `gallery` as `name`'s templates of its modality, creating the user when new.

    Fails before touching the store when the name is invalid, the gallery has too few samples or its templates
    verify at `threshold` (the active tau; None when there is none) as another enrolled person, so a failed
    enrollment never leaves a user without templates or wipes an existing user's templates. Without `admin`
    (the kiosk's own enrolment) an enrolled person's templates are only renewed from a face that matches them.
    """
    name = person_name(name)
    if not gallery.sufficient:
        raise ProbeError(gallery.problem or "not enough samples", "add more images where the person is clearly seen")
    existing = store.user_by_name(name)
    refuse_enrolled_elsewhere(store, gallery, threshold, int(existing.id) if existing is not None else None, admin)
    if existing is not None and not admin:
        refuse_unverified_renewal(store, gallery, threshold, int(existing.id))
    user = existing if existing is not None else store.add_user(name)
    try:
        stored = store.set_templates(int(user.id), gallery.modality, gallery.vectors, gallery.model_sha256)
    except Exception:
        if existing is None:
            store.delete_user(int(user.id))  # do not leave a user without templates behind
        raise
    return Enrollment(int(user.id), str(user.name), existing is None, len(stored), gallery)


def delete_user_by_name(store: EnrollStore, name: str) -> Any:
    """Delete a user and everything of theirs (notes, vectors, links, templates); returns the deleted user."""
    user = store.user_by_name(name)
    if user is None:
        raise StoreError(f"no user named '{name.strip()}'", "see `kiosk users list`")
    store.delete_user(int(user.id))
    return user


def samples_from_paths(paths: Sequence[Path], *, video_frames: int = 12) -> list[Sample]:
    """Enrollment samples from image files, folders of images, and video files (evenly spaced frames)."""
    samples: list[Sample] = []
    for path in paths:
        if path.is_dir():
            images = list_images(path)
            if not images:
                raise DataError(f"folder {path} holds no images", "give image files or a folder of images")
            samples.extend(_image_sample(p, f"{path.name}/{p.name}") for p in images)
        elif path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
            samples.append(_image_sample(path, path.name))
        elif path.is_file():
            samples.extend(video_samples(path, video_frames))
        else:
            raise DataError(f"{path} does not exist", "give existing image files, folders or videos")
    return samples


def _image_sample(path: Path, label: str) -> Sample:
    try:
        image = read_image_file(path)
    except ImageTooLarge as exc:
        return Sample(label, None, exc.message)
    readable = image is not None and image.ndim in (2, 3)
    reason = None if readable else "unreadable image (corrupt, empty or not an image)"
    return Sample(label, image if readable else None, reason)


def video_samples(path: Path, count: int) -> list[Sample]:
    """`count` frames evenly spaced over a video file; DataError when it is not a decodable video."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            raise DataError(f"{path.name} is neither an image nor a readable video", "give images or a video")
        frame_size = (int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        check_image_size(frame_size, f"the frames of {path.name}")
        total = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        if total <= 0:
            raise DataError(f"{path.name} has no frames", "give images or a video")
        wanted = sorted(set(np.linspace(0, total - 1, max(1, count)).round().astype(int).tolist()))
        samples = []
        for index in wanted:
            capture.set(cv2.CAP_PROP_POS_FRAMES, index)
            ok, image = capture.read()
            samples.append(
                Sample(f"{path.name} frame {index}", image if ok else None, None if ok else "frame not decodable")
            )
        return samples
    finally:
        capture.release()


def enrollment_embed(embedder: Embedder, *, precropped: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """How enrollment embeds a sample: refusing one with several faces when the embedder can count them
    (`embed_enrollment_sample`, the face embedder), else its plain or pre-cropped entry point."""
    checked = getattr(embedder, "embed_enrollment_sample", None)
    if callable(checked):
        return lambda image: checked(image, precropped=precropped)
    return precropped_embed(embedder) if precropped else embedder.embed_image


def precropped_embed(embedder: object) -> Callable[[np.ndarray], np.ndarray]:
    """The embedder's entry point for input that is already a face crop or palm ROI (no detection)."""
    for name in ("embed_crop", "embed_roi"):
        method = getattr(embedder, name, None)
        if callable(method):
            return method
    raise DataError(
        f"the {getattr(embedder, 'modality', '')} embedder takes no pre-cropped input", "give full images instead"
    )
