"""`kiosk calibrate face|palm` and `kiosk calibrate show` with a fake embedder (the real ones: test_real_data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kiosk.cli import calibrate as calibrate_cli

from .fakes import FAKE_SHA, MakeFolder, PixelEmbedder


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> typer.Typer:
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIOSK_PATHS__CALIBRATION_DIR", str(tmp_path / "calibration"))
    embedders: list[PixelEmbedder] = []

    def fake_loader(_config: object, modality: str) -> PixelEmbedder:
        embedders.append(PixelEmbedder(modality))
        return embedders[-1]

    monkeypatch.setattr("kiosk.calibration.embed.load_embedder", fake_loader)
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Test root."""

    calibrate_cli.register(app)
    app.embedders = embedders  # type: ignore[attr-defined]
    return app


def test_calibrate_writes_the_active_file_and_show_lists_it(
    cli: typer.Typer, image_folder: MakeFolder, tmp_path: Path
) -> None:
    folder = image_folder(identities=10, per_identity=4, corrupt=1)
    runner = CliRunner()
    result = runner.invoke(cli, ["calibrate", "palm", "--data", str(folder), "--benchmark", "tongji", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["active"] is True
    assert payload["calibration"]["rule"] == "strict"
    assert len(payload["calibration"]["dataset"]["unreadable"]) == 1
    assert (tmp_path / "calibration" / "palm-tongji.json").is_file()
    assert (tmp_path / "calibration" / "palm-tongji.png").is_file()

    shown = runner.invoke(cli, ["calibrate", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = {row["modality"]: row for row in json.loads(shown.stdout)}
    assert rows["palm"]["threshold"] == payload["calibration"]["threshold"]
    assert rows["palm"]["encoder_sha256"] == FAKE_SHA
    assert "not found" in rows["face"]["error"]

    checked = runner.invoke(cli, ["calibrate", "show", "--check"])
    assert "matches the active encoder" in checked.stdout


def test_second_run_reuses_cached_embeddings(cli: typer.Typer, image_folder: MakeFolder) -> None:
    folder = image_folder(identities=6, per_identity=3)
    runner = CliRunner()
    args = ["calibrate", "face", "--data", str(folder), "--rule", "tau_d", "--dry-run", "--json"]
    first = runner.invoke(cli, args)
    second = runner.invoke(cli, args)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    calls = [embedder.calls for embedder in cli.embedders]  # type: ignore[attr-defined]
    assert calls == [18, 1]  # the second run re-embeds one image only, to check the cache still applies
    first_tau = json.loads(first.stdout.strip().splitlines()[-1])["calibration"]["threshold"]
    second_tau = json.loads(second.stdout.strip().splitlines()[-1])["calibration"]["threshold"]
    assert first_tau == second_tau


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "/nonexistent/folder"], "data folder /nonexistent/folder does not exist"),
        (["--rule", "median"], "unknown rule 'median'"),
        (["--target-far", "2"], "target FAR 2.0 is not between 0 and 1"),
    ],
)
def test_bad_arguments_are_one_line(cli: typer.Typer, image_folder: MakeFolder, args: list[str], message: str) -> None:
    folder = image_folder(identities=3, per_identity=2)
    full = ["calibrate", "face", "--data", str(folder), *args]
    result = CliRunner().invoke(cli, full)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_one_identity_via_cli(cli: typer.Typer, image_folder: MakeFolder) -> None:
    folder = image_folder(identities=1, per_identity=5)
    result = CliRunner().invoke(cli, ["calibrate", "face", "--data", str(folder)])
    assert result.exit_code == 2
    assert "only one identity" in result.output


def test_show_leaves_out_the_text_encoders_thresholds_but_lists_a_broken_file(cli: typer.Typer, tmp_path: Path) -> None:
    folder = tmp_path / "calibration"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "relevance-0123456789abcdef.json").write_text(json.dumps({"encoder_sha256": "ab", "floor": 0.4}))
    (folder / "face-other.json").write_text("{ not json")
    shown = CliRunner().invoke(cli, ["calibrate", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    paths = [Path(row["path"]).name for row in json.loads(shown.stdout)]
    assert "relevance-0123456789abcdef.json" not in paths
    assert "face-other.json" in paths
