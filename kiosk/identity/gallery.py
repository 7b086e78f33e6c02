"""Enrollment: several images per person become templates, after outliers are rejected with a reason.

Works for any embedder with `modality`, `model_sha256` and `embed_image(image) -> vector` (face and palm).
Each sample is embedded on its own (a sample the embedder refuses is rejected with the embedder's reason);
the remaining embeddings are compared with their medoid, the sample most similar to all others, and those
below `outlier_min_cosine` are rejected as probably someone else or a bad crop. Enrollment needs at least
`min_samples` accepted samples. Templates replace the user's earlier templates of that modality; notes are
never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kiosk.errors import DataError, KioskError, ProbeError, StoreError
from kiosk.identity.sources import IMAGE_SUFFIXES, list_images, read_image
from kiosk.identity.verify import l2_normalise

log = logging.getLogger(__name__)

# Samples below this cosine to the samples' medoid are rejected, per modality (palm: Tongji's FAR 1e-3 ~ 0.30).
OUTLIER_MIN_COSINE: dict[str, float] = {"face": 0.5, "palm": 0.3}
MAX_TEMPLATES = 10  # templates kept per user and modality, evenly spread over the samples


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
    def user_by_name(self, name: str) -> Any: ...
    def delete_user(self, user_id: int) -> None: ...
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
    for sample in samples:
        if sample.image is None:
            embedded.append(EmbeddedSample(sample.label, None, sample.problem or "unreadable image"))
            continue
        try:
            embedded.append(EmbeddedSample(sample.label, l2_normalise(embed(sample.image))))
        except KioskError as exc:
            embedded.append(EmbeddedSample(sample.label, None, exc.message))
        except Exception as exc:  # one sample must not abort enrollment; the reason is reported and logged
            log.exception("embedding %s failed", sample.label)
            embedded.append(EmbeddedSample(sample.label, None, f"embedding failed ({type(exc).__name__})"))
    return embedded


def build_gallery(
    embedder: Embedder,
    samples: Iterable[Sample],
    *,
    min_samples: int = 3,
    outlier_min_cosine: float = OUTLIER_MIN_COSINE["face"],
    max_templates: int = MAX_TEMPLATES,
    embed: Callable[[np.ndarray], np.ndarray] | None = None,
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
    )


def select_templates(
    modality: str,
    model_sha256: str,
    embedded: Sequence[EmbeddedSample],
    *,
    min_samples: int = 3,
    outlier_min_cosine: float = OUTLIER_MIN_COSINE["face"],
    max_templates: int = MAX_TEMPLATES,
) -> Gallery:
    """Outlier rejection and template choice on already-embedded samples.

    Lets a caller that already holds embeddings (e.g. the live verifier's recent good frames, see
    `ProbeFuser.observations()`) enroll without running the model again.
    """
    outcomes: dict[int, SampleOutcome] = {}
    positions: list[int] = []
    vectors: list[np.ndarray] = []
    for position, sample in enumerate(embedded):
        if sample.vector is None:
            outcomes[position] = SampleOutcome(sample.label, False, sample.problem or "no embedding")
        else:
            positions.append(position)
            vectors.append(l2_normalise(sample.vector))
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


def enroll(store: EnrollStore, name: str, gallery: Gallery) -> Enrollment:
    """Store `gallery` as `name`'s templates of its modality, creating the user when new.

    Fails (ProbeError) before touching the store when the gallery has too few samples, so a failed
    enrollment never leaves a user without templates or wipes an existing user's templates.
    """
    name = name.strip()
    if not name:
        raise DataError("a user needs a non-empty name", "give the person's name")
    if not gallery.sufficient:
        raise ProbeError(gallery.problem or "not enough samples", "add more images where the person is clearly seen")
    existing = store.user_by_name(name)
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
    image = read_image(path)
    return Sample(label, image, None if image is not None else "unreadable image (corrupt, empty or not an image)")


def video_samples(path: Path, count: int) -> list[Sample]:
    """`count` frames evenly spaced over a video file; DataError when it is not a decodable video."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            raise DataError(f"{path.name} is neither an image nor a readable video", "give images or a video")
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


def precropped_embed(embedder: object) -> Callable[[np.ndarray], np.ndarray]:
    """The embedder's entry point for input that is already a face crop or palm ROI (no detection)."""
    for name in ("embed_crop", "embed_roi"):
        method = getattr(embedder, name, None)
        if callable(method):
            return method
    raise DataError(
        f"the {getattr(embedder, 'modality', '')} embedder takes no pre-cropped input", "give full images instead"
    )
