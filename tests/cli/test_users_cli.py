"""`kiosk users enroll/list/delete` with the real face model on the face-video photos and frames."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kiosk.cli import users as users_cli
from kiosk.cli.users import parse_modality_paths
from kiosk.config import KioskConfig
from kiosk.errors import DataError, ModelError


@pytest.fixture(scope="module")
def face_embedder(base_config: KioskConfig) -> Any:
    from kiosk.identity.face import load_face_embedder

    return load_face_embedder(base_config)


@pytest.fixture(params=["sqlite", "fleet"])
def cli(
    request: pytest.FixtureRequest,
    base_config: KioskConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    face_embedder: Any,
) -> Iterator[Any]:
    """Invoke `kiosk users ...` in-process with a fresh home, on the SQLite store and on the fleet store (sealed
    at rest by default on both); the real embedder is loaded once per module."""
    if request.param == "fleet":
        _, terminal_url = request.getfixturevalue("pg_database")
        monkeypatch.setenv("KIOSK_STORE__URL", terminal_url)
    app = typer.Typer()
    users_cli.register(app)
    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIOSK_PATHS__MODELS_DIR", str(base_config.paths.models))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    original = users_cli.load_embedder

    def cached_loader(cfg: KioskConfig, modality: str) -> Any:
        return face_embedder if modality == "face" else original(cfg, modality)

    monkeypatch.setattr(users_cli, "load_embedder", cached_loader)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, ["users", *args], input=input)

    yield invoke


def test_parse_modality_paths() -> None:
    parsed = parse_modality_paths(["--face", "a.png", "b.png", "--palm", "p.png", "--face=c.png"])
    assert parsed == {"face": [Path("a.png"), Path("b.png"), Path("c.png")], "palm": [Path("p.png")]}
    with pytest.raises(DataError, match="not preceded by --face"):
        parse_modality_paths(["a.png"])
    with pytest.raises(DataError, match="unknown option --fase"):
        parse_modality_paths(["--fase", "a.png"])
    with pytest.raises(DataError, match="--palm needs at least one image"):
        parse_modality_paths(["--face", "a.png", "--palm"])


@pytest.mark.real_models
@pytest.mark.real_data
def test_enroll_list_reenroll_delete(cli: Any, data_dir: Path) -> None:
    photos = data_dir / "face_video"
    lin = str(photos / "lin-manuel-miranda.png")
    alex = str(photos / "alex-lacamoire.png")
    video = str(photos / "short_hamilton_clip.mp4")

    result = cli("enroll", "Lin", "--face", lin, video, "--video-frames", "16", "--json")
    assert result.exit_code == 0, result.output
    enrolled = json.loads(result.stdout)
    assert enrolled["enrolled"] and enrolled["created"]
    face = enrolled["galleries"][0]
    assert face["modality"] == "face" and face["templates"] >= 3
    assert len(face["samples"]) == 1 + 16  # the photo and 16 evenly spaced video frames
    labels = {s["label"]: s for s in face["samples"]}
    assert labels["lin-manuel-miranda.png"]["accepted"]
    assert any(not s["accepted"] and s["reason"].startswith("no usable face") for s in face["samples"])

    # one photo is not enough by default: reported per sample, nothing stored
    refused = cli("enroll", "Alex", "--face", alex)
    assert refused.exit_code == 2
    assert "only 1 of 1 face samples are usable, 3 needed" in refused.output
    assert "nothing was stored" in refused.output
    assert "Traceback" not in refused.output

    assert cli("enroll", "Alex", "--face", alex, "--min-samples", "1").exit_code == 0

    listed = json.loads(cli("list", "--json").stdout)
    assert [row["name"] for row in listed] == ["Lin", "Alex"]
    assert listed[0]["modalities"]["face"]["templates"] == face["templates"]
    assert listed[1]["modalities"]["face"]["templates"] == 1
    assert listed[0]["notes"] == 0
    human = cli("list")
    assert "Lin" in human.stdout and "face x" in human.stdout

    again = cli("enroll", "Lin", "--face", lin, video, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["created"] is False
    assert json.loads(cli("list", "--json").stdout)[0]["user_id"] == listed[0]["user_id"]

    kept = cli("delete", "Alex", input="n\n")
    assert kept.exit_code == 1 and "nothing deleted" in kept.output
    gone = cli("delete", "Alex", "--yes", "--json")
    assert gone.exit_code == 0 and json.loads(gone.stdout)["deleted"]
    assert [row["name"] for row in json.loads(cli("list", "--json").stdout)] == ["Lin"]

    missing = cli("delete", "Alex", "--yes")
    assert missing.exit_code == 2 and "no user named 'Alex'" in missing.output


def test_bad_enroll_inputs_are_one_line_errors(cli: Any, tmp_path: Path) -> None:
    no_images = cli("enroll", "Ana")
    assert no_images.exit_code == 2 and "no images given" in no_images.output
    missing = cli("enroll", "Ana", "--face", str(tmp_path / "none.png"))
    assert missing.exit_code == 2 and "does not exist" in missing.output
    corrupt = tmp_path / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG broken")
    bad = cli("enroll", "Ana", "--face", str(corrupt), "--min-samples", "1")
    assert bad.exit_code == 2 and "unreadable image" in bad.output and "nothing was stored" in bad.output
    assert json.loads(cli("list", "--json").stdout) == []


def test_palm_without_a_palm_embedder_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(users_cli.EMBEDDER_LOADERS, "palm", ("kiosk.identity.no_such_palm_module", "load"))
    with pytest.raises(ModelError, match="palm enrollment is not available"):
        users_cli.load_embedder(KioskConfig(), "palm")


def test_users_command_is_registered(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "KIOSK_HOME": str(tmp_path / "home")}
    env.pop("KIOSK_CONFIG", None)
    result = subprocess.run(
        [sys.executable, "-m", "kiosk", "users", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


@pytest.mark.real_models
@pytest.mark.real_data
def test_enroll_precropped_faces(cli: Any, data_dir: Path) -> None:
    crops = data_dir / "lfw3d_frontalized" / "images" / "Colin_Powell"
    images = [str(crops / f"Colin_Powell_{i:04d}.jpg") for i in range(1, 5)]
    intruder = str(data_dir / "lfw3d_frontalized" / "images" / "AJ_Cook" / "AJ_Cook_0001.jpg")
    result = cli("enroll", "Colin", "--precropped", "--face", *images, intruder, "--json")
    assert result.exit_code == 0, result.output
    samples = {s["label"]: s for s in json.loads(result.stdout)["galleries"][0]["samples"]}
    assert all(samples[Path(p).name]["accepted"] for p in images)
    assert samples["AJ_Cook_0001.jpg"]["reason"].startswith("outlier")
