"""The 'fused' rule: the gate's tau holds the target FAR for probes fused over the live camera's frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kiosk.calibration import load_calibration
from kiosk.calibration.fused_trials import fused_trials
from kiosk.calibration.run import DataSpec, calibrate_scores, run_calibration
from kiosk.calibration.schema import EncoderInfo
from kiosk.errors import CalibrationError
from kiosk.identity.verify import FUSE_FRAMES

from .fakes import FAKE_SHA, MakeFolder, PixelEmbedder
from .test_sensitive_threshold import noisy_identities

FRAMES = tuple(range(1, FUSE_FRAMES["face"] + 1))


def pair_scores(vectors: np.ndarray, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(names)
    upper = np.triu_indices(len(names), k=1)
    same = labels[upper[0]] == labels[upper[1]]
    scores = (vectors @ vectors.T)[upper]
    return scores[same], scores[~same]


def calibrated(target_far: float = 1e-3, rule: str = "auto", people: int = 60):  # type: ignore[no-untyped-def]
    vectors, names = noisy_identities(people=people, images=9, noise=1.2)
    genuine, impostor = pair_scores(vectors, names)
    trials = fused_trials(vectors, names, FRAMES, enrol=3, draws=10)
    result = calibrate_scores(
        genuine,
        impostor,
        modality="face",
        encoder=EncoderInfo(name="noise", sha256=FAKE_SHA),
        rule=rule,  # type: ignore[arg-type]
        target_far=target_far,
        bootstrap=False,
        fused=trials,
    )
    return result, trials


def test_fused_rule_holds_the_target_for_every_frame_count_and_is_never_below_strict() -> None:
    result, trials = calibrated()
    calibration = result.calibration
    assert calibration.rule == "fused"  # 'auto' with fused trials
    strict = calibration.operating_points["strict"].threshold
    assert calibration.threshold == max(strict, calibration.fused.threshold)
    for k in FRAMES:
        assert trials[k].scores.far(calibration.threshold).value <= 1e-3
    # Fusing averages noise away from impostors too: the pairs' threshold lets 5-frame impostors through.
    assert trials[FRAMES[-1]].scores.far(strict).value > 1e-3
    assert calibration.threshold > strict
    live = calibration.operating_points["fused"]
    assert live.far.trials == trials[FRAMES[-1]].scores.impostor.size  # its rates are the live probe's
    assert "single images: FRR" in live.note


def test_another_rule_or_target_keeps_the_fused_trials() -> None:
    result, trials = calibrated()
    strict = result.with_rule("strict")
    assert strict.calibration.rule == "strict" and strict.calibration.fused is not None
    looser = result.with_rule("fused", target_far=1e-2)
    assert looser.threshold < result.threshold
    assert looser.calibration.fused is not None and looser.calibration.fused.target_far == 1e-2
    for k in FRAMES:
        assert trials[k].scores.far(looser.threshold).value <= 1e-2


def test_without_fused_trials_auto_is_strict_and_fused_is_refused() -> None:
    vectors, names = noisy_identities(people=30, images=4, noise=1.2)
    genuine, impostor = pair_scores(vectors, names)
    encoder = EncoderInfo(name="noise", sha256=FAKE_SHA)
    result = calibrate_scores(genuine, impostor, modality="face", encoder=encoder, rule="auto", bootstrap=False)
    assert result.calibration.rule == "strict" and "fused" not in result.calibration.operating_points
    with pytest.raises(CalibrationError, match="'fused' rule needs"):
        calibrate_scores(genuine, impostor, modality="face", encoder=encoder, rule="fused", bootstrap=False)
    with pytest.raises(CalibrationError, match="'fused' rule needs"):
        result.with_rule("fused")


def test_image_folder_with_enough_images_per_person_is_calibrated_by_the_fused_rule(
    image_folder: MakeFolder, tmp_path: Path
) -> None:
    folder = image_folder(identities=24, per_identity=3 + FUSE_FRAMES["face"])
    result = run_calibration(DataSpec(folder), PixelEmbedder(), encoder_name="pixels", bootstrap=False)
    assert result.calibration.rule == "fused"
    fused = result.calibration.fused
    assert fused is not None and fused.identities == 24 and fused.frames_fused == FUSE_FRAMES["face"]
    assert [row.frames for row in fused.trade_off] == list(FRAMES)
    json_path, _ = result.apply(tmp_path / "out", plot=False)
    loaded = load_calibration(json_path, "face")
    assert loaded.fused == fused and loaded.threshold == result.threshold


def test_too_few_people_with_enough_images_gives_strict_and_says_why(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=12, per_identity=3 + FUSE_FRAMES["face"])
    result = run_calibration(DataSpec(folder), PixelEmbedder(), encoder_name="pixels", bootstrap=False)
    assert result.calibration.rule == "strict" and result.calibration.fused is None
    assert any("no fused trials: 12 people" in warning for warning in result.calibration.warnings)


def test_doctor_counts_the_fused_probes_trials_for_the_fused_rule() -> None:
    from kiosk import doctor

    result, trials = calibrated(target_far=1e-3, people=40)
    per_count = trials[FRAMES[-1]].scores.impostor.size
    assert 3 / 1e-3 <= per_count < 3 / 1e-4  # enough for 1e-3, too few for 1e-4
    assert doctor.calibration_trial_checks(result.calibration) == []
    strict_target = result.with_rule("fused", target_far=1e-4).calibration
    checks = doctor.calibration_trial_checks(strict_target)
    assert [c.status for c in checks] == ["warn"] and f"{per_count:,} impostor trials" in checks[0].message
