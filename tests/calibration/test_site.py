"""Site calibration: genuine scores from the enrolled people's own frames, impostors from the cohort and the other
enrolled people; a proposal with its intervals, honest about too few trials, never under the calibration unasked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kiosk.calibration.cohort import Cohort, CohortInfo, save_cohort
from kiosk.calibration.run import calibrate_scores
from kiosk.calibration.schema import EncoderInfo
from kiosk.calibration.site import propose, site_scores, trials_needed
from kiosk.cli import calibrate as calibrate_cli
from kiosk.config import load_config
from kiosk.errors import CalibrationError
from kiosk.memory.open import open_store
from kiosk.security.audit import audit_log_for

from .fakes import FAKE_SHA, PixelEmbedder

DIMENSION = 16


@dataclass(frozen=True)
class Frame:
    user_id: int
    modality: str
    vector: np.ndarray
    model_sha256: str = FAKE_SHA


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def enrolled(people: int, frames: int, seed: int = 0) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = unit(rng.normal(size=(people, DIMENSION)))
    return {user + 1: unit(centres[user] + rng.normal(0, 0.15, (frames, DIMENSION))) for user in range(people)}


def as_frames(people: dict[int, np.ndarray]) -> list[Frame]:
    return [Frame(user, "face", vector) for user, rows in people.items() for vector in rows]


def cohort_vectors(count: int, seed: int = 1) -> np.ndarray:
    return unit(np.random.default_rng(seed).normal(size=(count, DIMENSION)))


def save_test_cohort(directory: Path, templates: int) -> None:
    """A face cohort of `templates` random vectors for the fake encoder, written where the kiosk looks for it."""
    info = CohortInfo(
        modality="face",
        encoder="pixels",
        encoder_sha256=FAKE_SHA,
        templates=templates,
        dimension=DIMENSION,
        vectors_file=f"cohort-face-{FAKE_SHA[:16]}.npy",
        vectors_sha256="",
        source="test",
        command="test",
        created="2026-12-03T00:00:00+00:00",
    )
    save_cohort(Cohort(info, cohort_vectors(templates).astype(np.float32)), directory)


def test_genuine_scores_leave_one_frame_out_and_impostors_cover_cohort_and_other_people() -> None:
    people = enrolled(3, 4)
    people[4] = enrolled(1, 1, seed=7)[1]  # one frame: no genuine score of its own, still an impostor target and probe
    frames = [*as_frames(people), Frame(1, "face", people[1][0], "b" * 64), Frame(1, "palm", people[1][0])]
    cohort = cohort_vectors(50)
    scores = site_scores(frames, cohort, "face", FAKE_SHA)
    assert scores.people == 4 and scores.frames == 13 and scores.cohort_templates == 50
    assert scores.genuine.size == 12
    first = people[1]
    assert scores.genuine[0] == pytest.approx(max(float(first[0] @ first[j]) for j in (1, 2, 3)))
    cross = sum(rows.shape[0] * (len(people) - 1) for rows in people.values())
    assert scores.impostor.size == 50 * 4 + cross
    assert scores.impostor.max() < 1.0


def test_no_person_with_two_frames_gives_no_genuine_scores() -> None:
    people = {1: enrolled(1, 1)[1], 2: enrolled(1, 1, seed=3)[1]}
    with pytest.raises(CalibrationError, match="two or more face frames"):
        site_scores(as_frames(people), cohort_vectors(10), "face", FAKE_SHA)
    with pytest.raises(CalibrationError, match="nobody is enrolled"):
        site_scores(as_frames(people), cohort_vectors(10), "face", "b" * 64)


def test_too_few_impostor_trials_are_said_plainly_by_the_rule_of_three() -> None:
    scores = site_scores(as_frames(enrolled(5, 4)), cohort_vectors(200), "face", FAKE_SHA)
    assert scores.impostor.size < trials_needed(1e-3) == 3000
    proposal = propose(scores, 1e-3, "face")
    assert not proposal.resolved
    assert proposal.far.errors == 0 and proposal.threshold > scores.impostor.max()
    assert any("rule of three" in message and "3,000" in message for message in proposal.messages)
    low, high = proposal.threshold_ci95
    assert low <= proposal.threshold <= high + 1e-9


def test_enough_trials_resolve_the_target_with_intervals() -> None:
    scores = site_scores(as_frames(enrolled(10, 5)), cohort_vectors(400), "face", FAKE_SHA)
    proposal = propose(scores, 1e-2, "face", calibration_threshold=-1.0)
    assert proposal.resolved and not proposal.below_calibration
    assert proposal.far.value <= 1e-2 and proposal.far.trials == scores.impostor.size
    assert proposal.far.ci95[0] <= proposal.far.value <= proposal.far.ci95[1]
    assert not any("rule of three" in message for message in proposal.messages)
    assert propose(scores, 1e-2, "face", calibration_threshold=0.99).below_calibration


def test_a_proposal_under_a_fused_tau_says_what_each_holds_its_far_for() -> None:
    scores = site_scores(as_frames(enrolled(10, 5)), cohort_vectors(400), "face", FAKE_SHA)
    under_fused = propose(scores, 1e-2, "face", calibration_threshold=0.99, calibration_rule="fused")
    assert any("single frames only" in message for message in under_fused.messages)
    under_strict = propose(scores, 1e-2, "face", calibration_threshold=0.99, calibration_rule="strict")
    assert under_strict.below_calibration and not any("single frames" in m for m in under_strict.messages)
    above_fused = propose(scores, 1e-2, "face", calibration_threshold=-1.0, calibration_rule="fused")
    assert not any("single frames" in message for message in above_fused.messages)


# --- `kiosk calibrate face --site` -------------------------------------------------------------------------


@pytest.fixture()
def site_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> typer.Typer:
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIOSK_PATHS__CALIBRATION_DIR", str(tmp_path / "calibration"))
    monkeypatch.setattr("kiosk.calibration.embed.load_embedder", lambda _c, modality: PixelEmbedder(modality))
    config = load_config(path=None)
    with open_store(config) as store:
        for user, rows in enrolled(6, 4).items():
            store.set_templates(store.add_user(f"person {user}").id, "face", rows, FAKE_SHA)
    save_test_cohort(tmp_path / "calibration", 300)
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Test root."""

    calibrate_cli.register(app)
    return app


def active_calibration_at(tmp_path: Path, threshold: float) -> None:
    rng = np.random.default_rng(0)
    result = calibrate_scores(
        np.clip(rng.normal(0.7, 0.1, 200), -1, 1),
        np.clip(rng.normal(0.1, 0.1, 5000), -1, 1),
        modality="face",
        encoder=EncoderInfo(name="pixels", sha256=FAKE_SHA),
        benchmark="lfw",
        bootstrap=False,
    )
    calibration = result.calibration.model_copy(update={"threshold": threshold})
    (tmp_path / "calibration" / "face-lfw.json").write_text(calibration.model_dump_json())


def site(runner: CliRunner, app: typer.Typer, *extra: str) -> tuple[int, str]:
    result = runner.invoke(app, ["calibrate", "face", "--site", "--target-far", "1e-3", *extra])
    return result.exit_code, result.output


def test_site_proposes_without_writing_until_applied(site_cli: typer.Typer, tmp_path: Path) -> None:
    active_calibration_at(tmp_path, -0.5)
    runner = CliRunner()
    code, output = site(runner, site_cli, "--json")
    assert code == 0, output
    proposal = json.loads(output)["proposal"]
    assert proposal["people"] == 6 and proposal["far"]["trials"] == 300 * 6 + 24 * 5
    assert not proposal["resolved"] and proposal["impostor_trials_needed"] == 3000
    assert not (tmp_path / "calibration" / "face-site.json").exists()
    code, output = site(runner, site_cli)
    assert code == 0 and "rule of three" in output and "nothing written" in output
    code, output = site(runner, site_cli, "--apply")
    assert code == 0, output
    written = json.loads((tmp_path / "calibration" / "face-site.json").read_text())
    assert written["threshold"] == pytest.approx(proposal["threshold"]) and written["rule"] == "far"
    assert written["benchmark"] == "site" and any("rule of three" in w for w in written["warnings"])
    assert 'gate.face_calibration = "face-site.json"' in output


def test_site_never_lowers_the_gate_without_below_calibration(site_cli: typer.Typer, tmp_path: Path) -> None:
    active_calibration_at(tmp_path, 0.999)
    runner = CliRunner()
    code, output = site(runner, site_cli, "--apply")
    assert code != 0 and "--below-calibration" in output
    assert not (tmp_path / "calibration" / "face-site.json").exists()
    code, output = site(runner, site_cli, "--apply", "--below-calibration")
    assert code == 0, output
    assert (tmp_path / "calibration" / "face-site.json").is_file()
    entries = audit_log_for(load_config(path=None)).entries()
    assert entries[-1]["action"] == "site-calibration-applied" and entries[-1]["below_calibration"] is True


def test_site_and_data_exclude_each_other(site_cli: typer.Typer, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(site_cli, ["calibrate", "face", "--site", "--data", str(tmp_path)])
    assert result.exit_code != 0 and "one of --site or --data" in result.output
    result = runner.invoke(site_cli, ["calibrate", "face"])
    assert result.exit_code != 0 and "--site" in result.output


def test_show_leaves_the_cohort_out(site_cli: typer.Typer, tmp_path: Path) -> None:
    active_calibration_at(tmp_path, 0.5)
    result = CliRunner().invoke(site_cli, ["calibrate", "show", "--json"])
    assert result.exit_code == 0, result.output
    assert not [row for row in json.loads(result.stdout) if Path(row["path"]).name.startswith("cohort-")]
    assert len(json.loads(result.stdout)) == 2  # the active face and palm rows only
