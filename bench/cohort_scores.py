"""Scores of a verification population for bench_cohort: raw cosines with the images on each side, cohort
statistics, T-norm / S-norm / AS-norm, thresholds and error rates."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Trials:
    """Raw cosines of one population with the image indices of each side (for the cohort statistics)."""

    genuine: np.ndarray
    genuine_sides: tuple[np.ndarray, np.ndarray]
    impostor: np.ndarray
    impostor_sides: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Stats:
    mean: np.ndarray
    sd: np.ndarray


def cohort_stats(vectors: np.ndarray, cohort: np.ndarray, top_k: int | None) -> Stats:
    similarity = vectors @ cohort.T
    if top_k is not None:
        similarity = -np.sort(-similarity, axis=1)[:, :top_k]
    return Stats(similarity.mean(axis=1), np.maximum(similarity.std(axis=1), 1e-6))


def normalise(kind: str, scores: np.ndarray, sides: tuple[np.ndarray, np.ndarray], stats: Stats) -> np.ndarray:
    probe, template = sides
    if kind == "raw":
        return scores
    z_probe = (scores - stats.mean[probe]) / stats.sd[probe]
    if kind == "T-norm":
        return z_probe
    return 0.5 * (z_probe + (scores - stats.mean[template]) / stats.sd[template])


def trials_of(vectors: np.ndarray, labels: np.ndarray, images: np.ndarray, genuine_pairs: np.ndarray) -> Trials:
    """Given genuine pairs and every different-identity pair among `images`."""
    sub = vectors[images]
    similarity = sub @ sub.T
    upper = np.triu(np.ones(similarity.shape, dtype=bool), 1)
    different = labels[images][:, None] != labels[images][None, :]
    rows, cols = np.nonzero(upper & different)
    first, second = genuine_pairs[:, 0], genuine_pairs[:, 1]
    genuine = np.einsum("ij,ij->i", vectors[first], vectors[second])
    return Trials(genuine, (first, second), similarity[rows, cols], (images[rows], images[cols]))


def all_pairs(vectors: np.ndarray, labels: np.ndarray, images: np.ndarray) -> Trials:
    sub = vectors[images]
    similarity = sub @ sub.T
    upper = np.triu(np.ones(similarity.shape, dtype=bool), 1)
    same = labels[images][:, None] == labels[images][None, :]
    g_rows, g_cols = np.nonzero(upper & same)
    i_rows, i_cols = np.nonzero(upper & ~same)
    return Trials(
        similarity[g_rows, g_cols],
        (images[g_rows], images[g_cols]),
        similarity[i_rows, i_cols],
        (images[i_rows], images[i_cols]),
    )


def threshold_at(impostor: np.ndarray, target: float) -> float:
    ordered = np.sort(impostor)
    allowed = math.floor(target * ordered.size)
    return float(np.nextafter(ordered[ordered.size - allowed - 1], np.inf))


def rates(trials: Trials, kind: str, stats: Stats, threshold: float) -> tuple[float, float]:
    impostor = normalise(kind, trials.impostor, trials.impostor_sides, stats)
    genuine = normalise(kind, trials.genuine, trials.genuine_sides, stats)
    return float((impostor >= threshold).mean()), float((genuine < threshold).mean())


def pooled(parts: list[Trials]) -> Trials:
    return Trials(
        np.concatenate([p.genuine for p in parts]),
        (np.concatenate([p.genuine_sides[0] for p in parts]), np.concatenate([p.genuine_sides[1] for p in parts])),
        np.concatenate([p.impostor for p in parts]),
        (np.concatenate([p.impostor_sides[0] for p in parts]), np.concatenate([p.impostor_sides[1] for p in parts])),
    )
