"""Synthetic labelled image folders for the calibration tests."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from .fakes import MakeFolder


@pytest.fixture()
def image_folder(tmp_path: Path) -> MakeFolder:
    """make(identities, per_identity, corrupt=0, blank=0, lfw_layout=False) -> folder with manifest.csv."""

    def make(
        identities: int = 12,
        per_identity: int | list[int] = 4,
        corrupt: int = 0,
        blank: int = 0,
        lfw_layout: bool = False,
        noise: float = 45.0,
        seed: int = 0,
    ) -> Path:
        rng = np.random.default_rng(seed)
        root = tmp_path / f"data-{identities}-{seed}"
        counts = per_identity if isinstance(per_identity, list) else [per_identity] * identities
        rows = ["path,identity"]
        for person, count in enumerate(counts):
            name = f"Person_{person:03d}"
            base = rng.uniform(0, 255, (24, 24, 3))
            for sample in range(1, count + 1):
                image = np.clip(base + rng.normal(0, noise, base.shape), 0, 255).astype(np.uint8)
                relative = f"images/{name}/{name}_{sample:04d}.jpg" if lfw_layout else f"images/{name}_{sample}.png"
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                cv2.imwrite(str(root / relative), image)
                rows.append(f"{relative},{name}")
        for index in range(corrupt):
            relative = f"images/corrupt_{index}.png"
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(b"not an image")
            rows.append(f"{relative},Person_000")
        for index in range(blank):
            relative = f"images/blank_{index}.png"
            cv2.imwrite(str(root / relative), np.full((24, 24, 3), 128, np.uint8))
            rows.append(f"{relative},Person_001")
        (root / "manifest.csv").write_text("\n".join(rows) + "\n")
        return root

    return make
