"""The sensitive threshold chosen from fused multi-frame probes (issue #38.2): the trials, the choice at a target
FAR, the shipped file, and which threshold the product uses (override > calibrated for this encoder > margin)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from kiosk.calibration.fused_trials import choose_threshold, fused_trials
from kiosk.calibration.schema import EncoderInfo
from kiosk.calibration.sensitive import (
    SensitiveCalibration,
    calibrated_sensitive_threshold,
    is_sensitive_file,
    sensitive_path,
    sensitive_threshold,
)
from kiosk.config import KioskConfig, SensitiveConfig
from kiosk.errors import ConfigError
from kiosk.retrieval.sensitive import strict_threshold

SHA = "f" * 64


def noisy_identities(people: int, images: int, noise: float, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """Unit vectors around one random centre per identity (the noise is what fusing frames averages away)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(people, 64))
    rows = np.repeat(centres, images, axis=0) + noise * rng.normal(size=(people * images, 64))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32), [f"p{i}" for i in range(people) for _ in range(images)]


def test_fusing_frames_raises_genuine_scores_and_narrows_impostors() -> None:
    vectors, names = noisy_identities(people=40, images=10, noise=1.0)
    trials = fused_trials(vectors, names, (1, 3, 5), enrol=3, draws=10)
    single, fused = trials[1].scores, trials[5].scores
    assert trials[5].identities == 40 and trials[5].gallery == 40
    assert single.genuine.size == fused.genuine.size == 400
    assert fused.impostor.size == 400 * 39
    assert np.median(fused.genuine) > np.median(single.genuine) + 0.05
    assert np.std(fused.impostor) < np.std(single.impostor)


def test_identities_with_only_enrolment_images_are_impostor_gallery() -> None:
    vectors, names = noisy_identities(people=6, images=8, noise=1.0)
    few, few_names = noisy_identities(people=4, images=3, noise=1.0, seed=1)
    trials = fused_trials(np.vstack([vectors, few]), names + [f"q{n}" for n in few_names], (1, 5), draws=5)
    assert trials[5].identities == 6 and trials[5].gallery == 10
    assert trials[5].scores.impostor.size == 6 * 5 * 9


def test_threshold_holds_the_target_far_for_every_frame_count() -> None:
    vectors, names = noisy_identities(people=60, images=10, noise=1.0)
    trials = fused_trials(vectors, names, (1, 3, 5), draws=20)
    chosen = choose_threshold(trials, 1e-3)
    assert chosen.resolved  # 1,200 probes x 59 impostor identities >= 1,000
    for row in chosen.trade_off:
        assert row.far.value <= 1e-3
        assert chosen.threshold >= row.threshold_at_target
    # fused probes keep more owners above it than single crops do
    assert chosen.at(5).frr.value < chosen.at(1).frr.value


def test_a_threshold_the_gate_tau_already_holds_is_moved_just_above_tau() -> None:
    vectors, names = noisy_identities(people=60, images=10, noise=1.0)
    trials = fused_trials(vectors, names, (1, 3), draws=20)
    free = choose_threshold(trials, 1e-3)
    assert choose_threshold(trials, 1e-3, above=free.threshold - 0.05).threshold == free.threshold
    tau = free.threshold + 0.01234
    moved = choose_threshold(trials, 1e-3, above=tau)
    assert moved.threshold == pytest.approx(math.floor(tau * 1e4) / 1e4 + 1e-4) and moved.threshold > tau
    assert all(row.far.value <= free.at(row.frames).far.value for row in moved.trade_off)


def write_file(folder: Path, modality: str, threshold: float, sha: str = SHA) -> Path:
    rate = {"value": 0.0, "errors": 0, "trials": 10, "ci95": (0.0, 0.3)}
    calibration = SensitiveCalibration.model_validate(
        {
            "modality": modality,
            "threshold": threshold,
            "target_far": 1e-5,
            "resolved": True,
            "frames_fused": 5,
            "far": rate,
            "frr": rate,
            "trade_off": [],
            "encoder": EncoderInfo(name="test", sha256=sha),
            "dataset": "synthetic",
            "protocol": "test",
            "identities": 1,
            "gallery": 2,
            "created": datetime.now(UTC),
        }
    )
    path = sensitive_path(folder, modality)
    path.write_text(calibration.model_dump_json())
    return path


def test_the_shipped_value_counts_only_for_its_own_encoder(tmp_path: Path) -> None:
    assert is_sensitive_file(write_file(tmp_path, "face", 0.62)) and not is_sensitive_file(tmp_path / "face-lfw.json")
    assert calibrated_sensitive_threshold(tmp_path, "face", SHA) == 0.62
    assert calibrated_sensitive_threshold(tmp_path, "face", "e" * 64) is None
    assert calibrated_sensitive_threshold(tmp_path, "palm", SHA) is None  # no palm file
    sensitive_path(tmp_path, "palm").write_text(json.dumps({"modality": "palm"}))
    assert calibrated_sensitive_threshold(tmp_path, "palm", SHA) is None  # an invalid file is no file


def test_override_then_calibrated_then_margin() -> None:
    settings = SensitiveConfig()
    assert strict_threshold(settings, "face", 0.55, None) == pytest.approx(0.65)
    assert strict_threshold(settings, "face", 0.55, 0.59) == 0.59
    assert strict_threshold(settings, "face", 0.55, 0.54) == pytest.approx(0.65)  # below tau: not a stricter rule
    settings.face_threshold = 0.7
    assert strict_threshold(settings, "face", 0.55, 0.59) == 0.7
    settings.face_threshold = 0.5
    with pytest.raises(ConfigError):
        strict_threshold(settings, "face", 0.55, 0.59)


def test_the_product_reads_the_configured_calibration_folder(config: KioskConfig, tmp_path: Path) -> None:
    config.paths.calibration_dir = tmp_path
    assert sensitive_threshold(config, "face", SHA, 0.55) == pytest.approx(0.55 + config.sensitive.threshold_margin)
    write_file(tmp_path, "face", 0.6)
    assert sensitive_threshold(config, "face", SHA, 0.55) == 0.6
