"""Labelled data for calibration: an image manifest (all pairs) or an explicit pairs file (LFW style).

A manifest is a CSV with a `path` column (relative to the data folder) and an identity column
(`identity`, or `palm_id` as in the Tongji folder). A pairs file is LFW's pairs.txt (`name i j` genuine,
`name1 i name2 j` impostor, an optional `folds count` header) or lines `path_a path_b 0|1`.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kiosk.errors import DataError

IDENTITY_COLUMNS = ("identity", "palm_id", "subject", "label")
LFW_IMAGE_PATTERNS = ("images/{name}/{name}_{index:04d}.jpg", "{name}/{name}_{index:04d}.jpg")


@dataclass(frozen=True)
class LabelledImages:
    paths: list[Path]
    identities: list[str]

    @property
    def identity_count(self) -> int:
        return len(set(self.identities))


@dataclass(frozen=True)
class ExplicitPairs:
    """Pairs as indices into `images.paths`; `genuine[k]` says whether pair k is the same identity."""

    images: LabelledImages
    first: np.ndarray
    second: np.ndarray
    genuine: np.ndarray
    missing: list[str] = field(default_factory=list)


def find_manifest(data_dir: Path) -> Path:
    manifest = data_dir / "manifest.csv"
    if not manifest.is_file():
        raise DataError(f"no manifest.csv in {data_dir}", "give a folder with manifest.csv (path,identity)")
    return manifest


def read_manifest(data_dir: Path, manifest: Path | None = None, identity_column: str | None = None) -> LabelledImages:
    manifest = manifest or find_manifest(data_dir)
    try:
        with manifest.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            columns = reader.fieldnames or []
            column = identity_column or next((c for c in IDENTITY_COLUMNS if c in columns), None)
            if "path" not in columns or column is None or column not in columns:
                raise DataError(
                    f"{manifest} has columns {columns}; it needs 'path' and an identity column "
                    f"({identity_column or ' or '.join(IDENTITY_COLUMNS)})",
                    "write the manifest as CSV path,identity",
                )
            rows = [(row["path"], row[column]) for row in reader if row.get("path")]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read manifest {manifest} ({exc})", "check the file") from exc
    if not rows:
        raise DataError(f"manifest {manifest} lists no images", "add rows path,identity")
    return LabelledImages([data_dir / path for path, _ in rows], [identity for _, identity in rows])


def subset_identities(images: LabelledImages, max_identities: int, seed: int = 0) -> LabelledImages:
    """A deterministic subset: identities with >= 2 images first (they give genuine pairs)."""
    counts = Counter(images.identities)
    names = sorted(counts)
    rng = np.random.default_rng(seed)
    order = [names[i] for i in rng.permutation(len(names))]
    order.sort(key=lambda name: counts[name] < 2)
    keep = set(order[:max_identities])
    selected = [(p, i) for p, i in zip(images.paths, images.identities, strict=True) if i in keep]
    return LabelledImages([p for p, _ in selected], [i for _, i in selected])


def link_labelled_subset(data_dir: Path, folder: Path, identities: int, per_identity: int) -> Path:
    """A small labelled folder (symlinks + manifest.csv path,identity) of the first identities with enough images.

    For a quick calibration run on the admin screen, or a test, without copying the data set.
    """
    by_identity: dict[str, list[str]] = {}
    with (data_dir / "manifest.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            by_identity.setdefault(row["identity"], []).append(row["path"])
    chosen = sorted(name for name, paths in by_identity.items() if len(paths) >= per_identity)[:identities]
    folder.mkdir(parents=True)
    lines = ["path,identity"]
    for name in chosen:
        for path in by_identity[name][:per_identity]:
            target = folder / Path(path).name
            target.symlink_to(data_dir / path)
            lines.append(f"{target.name},{name}")
    (folder / "manifest.csv").write_text("\n".join(lines) + "\n")
    return folder


def check_identities(images: LabelledImages, source: str) -> None:
    counts = Counter(images.identities)
    if len(counts) < 2:
        only = next(iter(counts), "none")
        raise DataError(
            f"{source} has only one identity ({only}): impostor pairs need at least two",
            "calibrate on a data set with many identities",
        )
    if max(counts.values()) < 2:
        raise DataError(
            f"no genuine pairs: every identity in {source} has a single image",
            "calibrate on a data set with two or more images of some identities",
        )


def all_pair_counts(identities: list[str]) -> tuple[int, int]:
    counts = Counter(identities)
    total = len(identities) * (len(identities) - 1) // 2
    genuine = sum(n * (n - 1) // 2 for n in counts.values())
    return genuine, total - genuine


def _resolve_lfw(data_dir: Path, name: str, index: int) -> Path:
    for pattern in LFW_IMAGE_PATTERNS:
        candidate = data_dir / pattern.format(name=name, index=index)
        if candidate.is_file():
            return candidate
    return data_dir / LFW_IMAGE_PATTERNS[0].format(name=name, index=index)


def _parse_pair_line(data_dir: Path, fields: list[str]) -> tuple[Path, str, Path, str, bool]:
    if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
        name = fields[0]
        return (
            _resolve_lfw(data_dir, name, int(fields[1])),
            name,
            _resolve_lfw(data_dir, name, int(fields[2])),
            name,
            True,
        )
    if len(fields) == 4 and fields[1].isdigit() and fields[3].isdigit():
        first, second = fields[0], fields[2]
        return (
            _resolve_lfw(data_dir, first, int(fields[1])),
            first,
            _resolve_lfw(data_dir, second, int(fields[3])),
            second,
            first == second,
        )
    if len(fields) == 3 and fields[2] in ("0", "1"):
        same = fields[2] == "1"
        return data_dir / fields[0], fields[0], data_dir / fields[1], fields[1], same
    raise ValueError("expected 'name i j', 'name1 i name2 j' or 'path_a path_b 0|1'")


def _pair_lines(pairs_file: Path) -> Iterator[tuple[int, list[str]]]:
    try:
        lines = pairs_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read pairs file {pairs_file} ({exc})", "check the path") from exc
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or line.lstrip().startswith("#"):
            continue
        if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
            continue  # LFW header: folds, pairs per fold
        yield number, fields


def read_pairs(data_dir: Path, pairs_file: Path) -> ExplicitPairs:
    index: dict[Path, int] = {}
    paths: list[Path] = []
    identities: list[str] = []
    first: list[int] = []
    second: list[int] = []
    genuine: list[bool] = []
    missing: set[str] = set()

    def image_index(path: Path, identity: str) -> int:
        if path not in index:
            index[path] = len(paths)
            paths.append(path)
            identities.append(identity)
        return index[path]

    for number, fields in _pair_lines(pairs_file):
        try:
            path_a, id_a, path_b, id_b, same = _parse_pair_line(data_dir, fields)
        except ValueError as exc:
            raise DataError(f"{pairs_file}:{number}: cannot parse '{' '.join(fields)}' ({exc})", "") from exc
        for path in (path_a, path_b):
            if not path.is_file():
                missing.add(str(path))
        first.append(image_index(path_a, id_a))
        second.append(image_index(path_b, id_b))
        genuine.append(same)
    if not first:
        raise DataError(f"pairs file {pairs_file} lists no pairs", "give an LFW-style pairs.txt")
    return ExplicitPairs(
        LabelledImages(paths, identities),
        np.asarray(first, dtype=np.int64),
        np.asarray(second, dtype=np.int64),
        np.asarray(genuine, dtype=bool),
        sorted(missing),
    )


def impostor_keep_probability(impostor_pairs: int, max_impostors: int | None) -> float:
    if not max_impostors or impostor_pairs <= max_impostors:
        return 1.0
    return max_impostors / impostor_pairs


def needed_impostors(target_far: float) -> int:
    return math.ceil(1 / target_far)
