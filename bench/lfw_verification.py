"""LFW pair verification: read pairs.txt, score image pairs (FaceNet cosine, dlib distance), and the figures.

The figures are 10-fold accuracy (threshold chosen on 9 folds, tested on the 10th), EER and TAR at a fixed FAR,
plus the genuine/impostor score histogram.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from kiosk.identity.align import pad_precropped, resize
from kiosk.identity.face import FaceEmbedder

FAR_TARGET = 1e-3


@dataclass(frozen=True)
class Pair:
    first: str  # path relative to images/
    second: str
    same: bool
    fold: int


def read_pairs(lfw: Path) -> list[Pair]:
    lines = (lfw / "pairs.txt").read_text().split("\n")
    folds, per_fold = (int(v) for v in lines[0].split())
    pairs = []
    rows = [line.split() for line in lines[1:] if line.strip()]
    for index, row in enumerate(rows):
        fold = index // (2 * per_fold)
        if len(row) == 3:
            name, i, j = row
            pairs.append(Pair(_image(name, i), _image(name, j), True, fold))
        else:
            name1, i, name2, j = row
            pairs.append(Pair(_image(name1, i), _image(name2, j), False, fold))
    assert len(pairs) == folds * 2 * per_fold, "pairs.txt does not match its header"
    return pairs


def _image(name: str, index: str) -> str:
    return f"{name}/{name}_{int(index):04d}.jpg"


# ---- verification metrics ------------------------------------------------------------------------


def best_threshold(scores: np.ndarray, same: np.ndarray) -> float:
    candidates = np.unique(scores)
    inner = (candidates[:-1] + candidates[1:]) / 2
    midpoints = np.concatenate([[candidates[0] - 1e-6], inner, [candidates[-1] + 1e-6]])
    accuracy = [np.mean((scores >= t) == same) for t in midpoints]
    return float(midpoints[int(np.argmax(accuracy))])


def ten_fold_accuracy(scores: np.ndarray, same: np.ndarray, folds: np.ndarray) -> list[float]:
    accuracies = []
    for fold in np.unique(folds):
        test = folds == fold
        threshold = best_threshold(scores[~test], same[~test])
        accuracies.append(float(np.mean((scores[test] >= threshold) == same[test])))
    return accuracies


def equal_error_rate(scores: np.ndarray, same: np.ndarray) -> tuple[float, float]:
    genuine, impostor = np.sort(scores[same]), np.sort(scores[~same])
    thresholds = np.unique(scores)
    far = 1.0 - np.searchsorted(impostor, thresholds, side="left") / len(impostor)
    frr = np.searchsorted(genuine, thresholds, side="left") / len(genuine)
    index = int(np.argmin(np.abs(far - frr)))
    return float((far[index] + frr[index]) / 2), float(thresholds[index])


def tar_at_far(scores: np.ndarray, same: np.ndarray, far: float) -> tuple[float, float]:
    impostor = np.sort(scores[~same])[::-1]
    allowed = int(np.floor(far * len(impostor)))  # impostor pairs allowed above the threshold
    threshold = float(impostor[allowed]) + 1e-9
    return float(np.mean(scores[same] >= threshold)), threshold


def verification_figures(scores: np.ndarray, pairs: Sequence[Pair]) -> dict[str, float]:
    same = np.array([p.same for p in pairs])
    folds = np.array([p.fold for p in pairs])
    accuracies = ten_fold_accuracy(scores, same, folds)
    eer, eer_threshold = equal_error_rate(scores, same)
    tar, tar_threshold = tar_at_far(scores, same, FAR_TARGET)
    return {
        "accuracy": float(np.mean(accuracies)),
        "accuracy_std": float(np.std(accuracies)),
        "folds": len(accuracies),
        "eer": eer,
        "eer_threshold": eer_threshold,
        "tar_at_far_1e-3": tar,
        "tar_threshold": tar_threshold,
        "pairs": len(pairs),
    }


# ---- embeddings ----------------------------------------------------------------------------------


def facenet_embeddings(
    embedder: FaceEmbedder,
    images: Path,
    names: Sequence[str],
    margin: float,
    cache: Path | None,
    margin_x: float | None = None,
    mode: str = "reflect",
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Plain and mirrored FaceNet embeddings per image (unnormalised sum = flip TTA)."""
    pipeline = embedder.pipeline
    variant = "" if margin_x is None and mode == "reflect" else f"|{margin_x}|{mode}"
    key = hashlib.sha256(f"{embedder.model_sha256}|{margin:.4f}{variant}|{','.join(names)}".encode()).hexdigest()[:16]
    cache_file = cache / f"lfw_facenet_{key}.npz" if cache else None
    if cache_file and cache_file.exists():
        stored = np.load(cache_file)
        return dict(zip(names, stored["plain"], strict=True)), dict(zip(names, stored["flip"], strict=True))
    plain, flip = [], []
    size = pipeline.embedder.input_size
    for count, name in enumerate(names, 1):
        rgb = cv2.cvtColor(read_crop(images / name), cv2.COLOR_BGR2RGB)
        crop = resize(pad_precropped(rgb, margin, margin_x, mode), size)
        vectors = pipeline.embedder.embed_crops([crop, np.ascontiguousarray(crop[:, ::-1])])
        plain.append(vectors[0])
        flip.append(vectors[1])
        if count % 1000 == 0:
            print(f"  margin {margin:.2f}: {count}/{len(names)} images", flush=True)
    if cache_file:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache_file, plain=np.stack(plain), flip=np.stack(flip))
    return dict(zip(names, plain, strict=True)), dict(zip(names, flip, strict=True))


def read_crop(path: Path) -> np.ndarray:
    image = cv2.imread(str(path))
    if image is None:
        raise SystemExit(f"cannot read {path}")
    return image


def cosine_scores(pairs: Sequence[Pair], vectors: dict[str, np.ndarray]) -> np.ndarray:
    def unit(v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v)

    return np.array([float(unit(vectors[p.first]) @ unit(vectors[p.second])) for p in pairs])


def dlib_lfw_scores(images: Path, pairs: Sequence[Pair], margin: float, cache: Path | None) -> np.ndarray:
    """face_recognition (dlib ResNet, 5-point chip) on the same crops; score = -euclidean distance."""
    import face_recognition

    names = sorted({n for p in pairs for n in (p.first, p.second)})
    key = hashlib.sha256(f"dlib|{margin:.4f}|{','.join(names)}".encode()).hexdigest()[:16]
    cache_file = cache / f"lfw_dlib_{key}.npz" if cache else None
    if cache_file and cache_file.exists():
        stored = dict(zip(names, np.load(cache_file)["encodings"], strict=True))
        return np.array([-float(np.linalg.norm(stored[p.first] - stored[p.second])) for p in pairs])
    encodings = {}
    for count, name in enumerate(names, 1):
        rgb = cv2.cvtColor(read_crop(images / name), cv2.COLOR_BGR2RGB)
        height, width = rgb.shape[:2]
        pad = round(height * margin / 2)
        padded = cv2.copyMakeBorder(rgb, pad, pad, pad, pad, cv2.BORDER_REFLECT_101)
        location = (pad, pad + width, pad + height, pad)  # top, right, bottom, left: the original crop
        encodings[name] = face_recognition.face_encodings(padded, known_face_locations=[location])[0]
        if count % 200 == 0:
            print(f"  dlib: {count}/{len(names)} images", flush=True)
    if cache_file:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache_file, encodings=np.stack([encodings[n] for n in names]))
    return np.array([-float(np.linalg.norm(encodings[p.first] - encodings[p.second])) for p in pairs])


# ---- score histogram -----------------------------------------------------------------------------


def histogram(path: Path, scores: np.ndarray, pairs: Sequence[Pair], threshold: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    same = np.array([p.same for p in pairs])
    figure, axis = plt.subplots(figsize=(7, 4))
    bins = np.linspace(float(scores.min()), float(scores.max()), 60).tolist()
    axis.hist(scores[same], bins=bins, alpha=0.6, label=f"genuine ({same.sum()})", color="tab:green")
    axis.hist(scores[~same], bins=bins, alpha=0.6, label=f"impostor ({(~same).sum()})", color="tab:red")
    axis.axvline(threshold, color="black", linestyle="--", label=f"EER threshold {threshold:.3f}")
    axis.set_xlabel("cosine similarity")
    axis.set_ylabel("pairs")
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
