"""Which benchmark identity each LoCoMo user is bound to, and which images give gallery and probe.

One image of the identity becomes the gallery template stored with all of that user's notes; a
different image of the same identity is the Owner probe. Only identities with at least two images are
eligible. The choice depends on the seed and modality only, and is written into the results.

An image the terminal's capture gates refuse (a palm ROI that slipped off the palm, say) is one the kiosk
would have asked to capture again, so it never becomes a gallery or probe: it is replaced by another image of
the same identity, drawn from that identity's own random stream, so every other binding stays as it was.
The refused images and the reasons are written into the results with the binding.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kiosk.errors import DataError

BENCHMARKS: dict[str, tuple[str, str, str]] = {
    # modality: (benchmark name, folder under the data dir, identity column of manifest.csv)
    "face": ("lfw", "lfw3d_frontalized", "identity"),
    "palm": ("tongji", "palm_tongji_palmnet", "palm_id"),
}


@dataclass(frozen=True)
class IdentityBinding:
    user: str  # LoCoMo sample id
    identity: str
    gallery_image: str  # relative to the benchmark folder
    probe_image: str
    refused_images: tuple[str, ...] = field(default=())  # "path: reason" of drawn images the capture gates refused

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


Refusal = Callable[[str], str | None]
"""Image path -> None when the terminal's capture gates accept it, else the reason they refuse it."""


def benchmark_dir(data_dir: Path, modality: str) -> Path:
    if modality not in BENCHMARKS:
        raise DataError(f"unknown modality {modality!r}", "use face or palm")
    folder = data_dir / BENCHMARKS[modality][1]
    if not folder.is_dir():
        raise DataError(f"{modality} benchmark folder {folder} does not exist", "set KIOSK_DATA to the shared data")
    return folder


def read_identity_images(data_dir: Path, modality: str) -> dict[str, list[str]]:
    """identity -> its image paths (manifest order) from the benchmark's manifest.csv."""
    folder = benchmark_dir(data_dir, modality)
    manifest = folder / "manifest.csv"
    column = BENCHMARKS[modality][2]
    if not manifest.is_file():
        raise DataError(f"{manifest} is missing", "the benchmark folder needs its manifest.csv")
    images: dict[str, list[str]] = {}
    with manifest.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "path" not in reader.fieldnames or column not in reader.fieldnames:
            raise DataError(f"{manifest} needs the columns 'path' and '{column}'", "use the shipped manifest")
        for row in reader:
            images.setdefault(row[column], []).append(row["path"])
    return images


def bind_identities(
    users: Sequence[str],
    images: dict[str, list[str]],
    seed: int,
    modality: str,
    identities: Sequence[str] | None = None,
    refusal: Refusal | None = None,
) -> list[IdentityBinding]:
    """Bind each user to a distinct identity with >= 2 images; explicit `identities` pin the choice.

    `refusal` (the capture gates): a drawn image it refuses is replaced by an accepted one of the same identity.
    """
    rng = random.Random(f"{seed}:{modality}:identities")
    if identities is not None:
        if len(identities) != len(users):
            raise DataError(
                f"{len(identities)} identities given for {len(users)} users", "give one identity per conversation"
            )
        if len(set(identities)) != len(identities):
            raise DataError("the same identity is given twice", "each user needs a different identity")
        chosen = list(identities)
        for identity in chosen:
            count = len(images.get(identity, []))
            if count == 0:
                raise DataError(f"identity {identity!r} is not in the {modality} manifest", "check the name")
            if count < 2:
                raise DataError(
                    f"identity {identity!r} has only one image",
                    "gallery and owner probe need two different images: pick an identity with >= 2",
                )
    else:
        eligible = sorted(identity for identity, paths in images.items() if len(paths) >= 2)
        if len(eligible) < len(users):
            raise DataError(
                f"only {len(eligible)} {modality} identities have two or more images; {len(users)} users need one each",
                "use fewer conversations or a larger benchmark set",
            )
        chosen = rng.sample(eligible, len(users))
    bindings = []
    for user, identity in zip(users, chosen, strict=True):
        paths = sorted(images[identity])
        drawn = rng.sample(paths, 2)
        (gallery, probe), refused = _captured(identity, paths, drawn, refusal, seed, modality)
        bindings.append(
            IdentityBinding(
                user=user, identity=identity, gallery_image=gallery, probe_image=probe, refused_images=refused
            )
        )
    return bindings


def _captured(
    identity: str, paths: list[str], drawn: list[str], refusal: Refusal | None, seed: int, modality: str
) -> tuple[list[str], tuple[str, ...]]:
    """`drawn` with each image the capture gates refuse replaced by an accepted one (identity's own stream)."""
    if refusal is None:
        return drawn, ()
    reasons: dict[str, str | None] = {}

    def refused(path: str) -> bool:
        if path not in reasons:
            reasons[path] = refusal(path)
        return reasons[path] is not None

    if not any(refused(path) for path in drawn):
        return drawn, ()
    spares = [path for path in paths if path not in drawn]
    random.Random(f"{seed}:{modality}:{identity}:recapture").shuffle(spares)
    kept: list[str] = []
    for path in drawn:
        while refused(path):
            if not spares:
                raise DataError(
                    f"identity {identity!r} has fewer than two images the capture gates accept",
                    "choose another identity or seed",
                )
            path = spares.pop()
        kept.append(path)
    notes = tuple(f"{path}: {reason}" for path, reason in reasons.items() if reason is not None)
    return kept, notes


def non_owner_of(bindings: Sequence[IdentityBinding], index: int) -> IdentityBinding:
    """The Non-owner probe for user `index`: the next user's owner probe (a fixed derangement)."""
    if len(bindings) < 2:
        raise DataError("a Non-owner probe needs at least two users", "evaluate two or more conversations")
    return bindings[(index + 1) % len(bindings)]
