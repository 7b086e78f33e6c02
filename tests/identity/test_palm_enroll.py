"""`kiosk users enroll NAME --palm ...` end to end: real palm images, real encoder, a temporary memory DB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import typer
from test_palm_roi import drawn_hand  # tests/identity is on sys.path (rootdir-less test modules)
from typer.testing import CliRunner

from kiosk.cli import users as users_cli
from kiosk.config import KioskConfig
from kiosk.identity.palm import PalmEmbedder, load_palm_embedder


@pytest.fixture(scope="module")
def palm_embedder(base_config: KioskConfig) -> Iterator[PalmEmbedder]:
    embedder = load_palm_embedder(base_config)
    yield embedder
    embedder.close()


@pytest.fixture()
def cli(base_config: KioskConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, palm_embedder: PalmEmbedder) -> Any:
    app = typer.Typer()
    users_cli.register(app)
    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIOSK_PATHS__MODELS_DIR", str(base_config.paths.models))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    original = users_cli.load_embedder
    monkeypatch.setattr(users_cli, "load_embedder", lambda cfg, m: palm_embedder if m == "palm" else original(cfg, m))
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["users", *args])


def tongji(data_dir: Path, palm: int) -> list[str]:
    paths = sorted((data_dir / "palm_tongji_palmnet" / "images").glob(f"{palm:04d}_*.bmp"))
    return [str(p) for p in paths[:4]]


@pytest.mark.real_data
def test_enroll_palm_rois_and_list(cli: Any, data_dir: Path, palm_embedder: PalmEmbedder) -> None:
    result = cli("enroll", "Ana", "--palm", *tongji(data_dir, 44), "--roi", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    gallery = payload["galleries"][0]
    assert payload["enrolled"] and gallery["modality"] == "palm"
    assert gallery["templates"] == 4 and gallery["model_sha256"] == palm_embedder.model_sha256
    listed = json.loads(cli("list", "--json").output)
    assert listed[0]["name"] == "Ana" and listed[0]["modalities"]["palm"]["templates"] == 4


@pytest.mark.real_data
def test_a_different_palm_among_the_samples_is_rejected_as_outlier(cli: Any, data_dir: Path) -> None:
    images = [*tongji(data_dir, 44), tongji(data_dir, 45)[0]]
    result = cli("enroll", "Ana", "--palm", *images, "--roi", "--json")
    assert result.exit_code == 0, result.output
    outcomes = json.loads(result.output)["galleries"][0]["samples"]
    assert [o["accepted"] for o in outcomes] == [True, True, True, True, False]


@pytest.mark.real_models
@pytest.mark.real_data
def test_enroll_from_full_hand_images_refuses_a_face(cli: Any, data_dir: Path, tmp_path: Path) -> None:
    texture_paths = tongji(data_dir, 44)[:3]
    hands = []
    for index, texture_path in enumerate(texture_paths):
        texture = cv2.imread(texture_path, cv2.IMREAD_GRAYSCALE)
        assert texture is not None
        path = tmp_path / f"hand{index}.png"
        cv2.imwrite(str(path), drawn_hand(np.asarray(texture)))
        hands.append(str(path))
    face = str(data_dir / "face_video" / "alex-lacamoire.png")
    result = cli("enroll", "Bo", "--palm", *hands, face, "--json")
    assert result.exit_code == 0, result.output
    outcomes = json.loads(result.output)["galleries"][0]["samples"]
    assert [o["accepted"] for o in outcomes] == [True, True, True, False]
    assert "no hand found" in outcomes[3]["reason"]
