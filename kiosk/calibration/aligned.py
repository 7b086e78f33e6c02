"""Calibration scores of palm probes that carry their re-alignments (palm.alignment_search), as the gate scores them.

With the search, a score is no longer symmetric: the probe image's re-aligned variants meet the other image's
single template vector. Every ordered pair of images is therefore a trial (each image once as probe, once as
template), scored as the largest cosine over the probe's vector and its variants (kiosk.identity.gate).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from kiosk.calibration.embed import Progress, load_image
from kiosk.errors import KioskError
from kiosk.identity.palm_alignment import AlignedVectors, AlignmentSearch


class AlignedEmbedder(Protocol):
    """A palm embedder whose probes carry re-alignments (kiosk.identity.palm.PalmEmbedder)."""

    alignment: AlignmentSearch | None

    def probe_vectors(self, image: np.ndarray, *, roi: bool = False) -> AlignedVectors: ...


def searches(embedder: object) -> bool:
    """True when the embedder's probes carry re-alignments (a palm embedder with palm.alignment_search on)."""
    return getattr(embedder, "alignment", None) is not None and callable(getattr(embedder, "probe_vectors", None))


def image_probe_rows(embedder: AlignedEmbedder, path: Path) -> np.ndarray | None:
    """(1 + V, D) unit rows of one calibration image as a probe (its vector, then its variants), or None when the
    capture gates refuse it (then it is no template either: embed_paths refused it too)."""
    try:
        vectors = embedder.probe_vectors(load_image(path), roi=True)  # calibration images are ROIs (embed_roi)
    except (KioskError, ValueError):
        return None
    rows = vectors.vector[None, :] if vectors.variants is None else np.vstack([vectors.vector, vectors.variants])
    return np.asarray(rows, dtype=np.float32)


def ordered_pair_scores(
    embedder: AlignedEmbedder,
    paths: Sequence[Path],
    templates: np.ndarray,
    labels: np.ndarray,
    keep_impostor: float,
    seed: int,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor scores of every image as a probe (with its variants) against every other image's
    template; `paths`, `templates` and `labels` list the usable images in one order."""
    rng = np.random.default_rng(seed)
    genuine: list[np.ndarray] = []
    impostor: list[np.ndarray] = []
    for index, path in enumerate(paths):
        rows = image_probe_rows(embedder, path)
        if rows is not None:
            scores = (templates @ rows.T).max(axis=1).astype(np.float64)
            others = np.arange(len(paths)) != index
            same = labels == labels[index]
            genuine.append(scores[others & same])
            kept = scores[others & ~same]
            if keep_impostor < 1.0:
                kept = kept[rng.random(kept.size) < keep_impostor]
            impostor.append(kept)
        if progress is not None:
            progress("search", index + 1, len(paths))
    if not genuine:
        return np.empty(0), np.empty(0)
    return np.concatenate(genuine), np.concatenate(impostor)
