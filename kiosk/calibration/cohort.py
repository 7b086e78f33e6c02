"""The impostor cohort shipped per modality and encoder: a few hundred templates of people nobody evaluates on.

A site has its enrolled people's own frames for genuine scores but no strangers; the cohort stands in for the
strangers (`kiosk.calibration.site`). It is computed once per encoder from identities disjoint from every
evaluation set (LFW3D identities outside pairs.txt for face, the Tongji tuning half for palm) and stored as
`calibration/cohort-<modality>-<sha16>.npy` (float32 unit rows) beside a JSON file naming the encoder and the
sha256 of the vectors, so a cohort made by another encoder is refused like a foreign threshold.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kiosk.calibration.cache import EmbeddingCache
from kiosk.calibration.data import LabelledImages
from kiosk.calibration.embed import Embedder, Progress, embed_paths
from kiosk.errors import CalibrationError, DataError


class CohortInfo(BaseModel):
    """What a cohort file holds and where its templates came from."""

    model_config = ConfigDict(extra="forbid")

    modality: str = Field(description="face or palm.")
    encoder: str = Field(description="Encoder name as configured.")
    encoder_sha256: str = Field(description="sha256 of the encoder model the templates were made with.")
    templates: int = Field(description="Rows in the vectors file (one template per cohort identity).")
    dimension: int = Field(description="Length of each template.")
    vectors_file: str = Field(description="The .npy file beside this JSON (float32, L2-normalised rows).")
    vectors_sha256: str = Field(description="sha256 of the vectors file, checked on load.")
    source: str = Field(description="Data set and identities the templates came from (disjoint from evaluation).")
    command: str = Field(description="The command that made this cohort.")
    created: str = Field(description="UTC time the cohort was written.")


@dataclass(frozen=True)
class Cohort:
    info: CohortInfo
    vectors: np.ndarray  # (templates, dimension) float32, unit rows


def cohort_stem(modality: str, encoder_sha256: str) -> str:
    return f"cohort-{modality}-{encoder_sha256[:16]}"


def cohort_path(directory: Path, modality: str, encoder_sha256: str) -> Path:
    """The cohort's JSON file for this modality and encoder."""
    return Path(directory) / f"{cohort_stem(modality, encoder_sha256)}.json"


def load_cohort(directory: Path, modality: str, encoder_sha256: str) -> Cohort:
    """The shipped cohort for this encoder; CalibrationError when missing, damaged or made for another encoder."""
    path = cohort_path(directory, modality, encoder_sha256)
    fix = f"python -m bench.bench_cohort --write-cohort --modality {modality} (with the active encoder)"
    if not path.is_file():
        raise CalibrationError(f"no {modality} impostor cohort for encoder sha256 {encoder_sha256[:12]}… ({path})", fix)
    try:
        info = CohortInfo.model_validate(json.loads(path.read_text(encoding="utf-8")))
        vectors_path = path.parent / info.vectors_file
        raw = vectors_path.read_bytes()
    except (OSError, ValueError, ValidationError) as exc:
        raise CalibrationError(f"impostor cohort {path} is unreadable ({exc})", fix) from exc
    if info.encoder_sha256 != encoder_sha256 or info.modality != modality:
        raise CalibrationError(f"impostor cohort {path} was made for another encoder or modality", fix)
    if hashlib.sha256(raw).hexdigest() != info.vectors_sha256:
        raise CalibrationError(f"impostor cohort {vectors_path} does not match its sha256 (damaged)", fix)
    vectors = np.load(vectors_path, allow_pickle=False).astype(np.float32)
    if vectors.ndim != 2 or vectors.shape != (info.templates, info.dimension):
        raise CalibrationError(f"impostor cohort {vectors_path} has shape {vectors.shape}", fix)
    return Cohort(info, vectors)


def cohort_images(
    images: LabelledImages, excluded: set[str], identities: int, per_identity: int = 1, seed: int = 0
) -> list[Path]:
    """Images of `identities` people outside `excluded` (the first `per_identity` listed of each), chosen
    deterministically; identities with fewer images are passed over."""
    listed: dict[str, list[Path]] = {}
    for path, identity in zip(images.paths, images.identities, strict=True):
        if identity not in excluded:
            listed.setdefault(identity, []).append(path)
    names = sorted(name for name, paths in listed.items() if len(paths) >= per_identity)
    if len(names) < identities:
        raise DataError(
            f"only {len(names)} identities outside the evaluation set, {identities} wanted", "ask for fewer"
        )
    chosen = sorted(names[i] for i in np.random.default_rng(seed).permutation(len(names))[:identities])
    return [path for name in chosen for path in listed[name][:per_identity]]


def build_cohort(
    embedder: Embedder,
    paths: Sequence[Path],
    *,
    encoder: str,
    source: str,
    command: str,
    progress: Progress | None = None,
    cache: EmbeddingCache | None = None,
) -> Cohort:
    """Embed one image per cohort identity (unreadable images are left out)."""
    embeddings = embed_paths(embedder, paths, progress, cache)
    vectors = embeddings.vectors[embeddings.valid].astype(np.float32)
    if vectors.shape[0] < 2:
        raise DataError("fewer than two cohort images could be embedded", "check the data folder")
    info = CohortInfo(
        modality=embedder.modality,
        encoder=encoder,
        encoder_sha256=embedder.model_sha256,
        templates=int(vectors.shape[0]),
        dimension=int(vectors.shape[1]),
        vectors_file=f"{cohort_stem(embedder.modality, embedder.model_sha256)}.npy",
        vectors_sha256="",
        source=source,
        command=command,
        created=datetime.now(UTC).replace(microsecond=0).isoformat(),
    )
    return Cohort(info, vectors)


def save_cohort(cohort: Cohort, directory: Path) -> Path:
    """Write the .npy and its JSON (the JSON last, so a half-written cohort is never loaded)."""
    directory.mkdir(parents=True, exist_ok=True)
    vectors_path = directory / cohort.info.vectors_file
    np.save(vectors_path, cohort.vectors.astype(np.float32), allow_pickle=False)
    digest = hashlib.sha256(vectors_path.read_bytes()).hexdigest()
    info = cohort.info.model_copy(update={"vectors_sha256": digest})
    path = cohort_path(directory, info.modality, info.encoder_sha256)
    path.write_text(json.dumps(info.model_dump(), indent=2) + "\n", encoding="utf-8")
    return path
