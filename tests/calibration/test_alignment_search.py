"""Palm calibration with the re-alignment search (palm.alignment_search): trials scored as the gate scores a probe
with variants, the file records it, and a mismatch with the setting is refused, never silently used."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest

from kiosk.calibration import active_threshold
from kiosk.calibration.collect import collect_scores
from kiosk.calibration.fused_trials import fused_trials
from kiosk.calibration.run import DataSpec, calibrate_scores, run_calibration
from kiosk.calibration.schema import EncoderInfo
from kiosk.calibration.sensitive import calibrated_sensitive_threshold, sensitive_path, sensitive_threshold
from kiosk.calibration.site import calibrate_site
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.identity.gate import user_scores
from kiosk.identity.palm_alignment import AlignedVectors, AlignmentSearch
from kiosk.identity.probe import Probe
from kiosk.memory.note import Template

from .fakes import FAKE_SHA, MakeFolder, PixelEmbedder
from .test_sensitive_threshold import noisy_identities, write_file


class ShiftingPalmEmbedder(PixelEmbedder):
    """A palm pixel embedder whose probes carry two re-alignments (the image rolled by one pixel each way)."""

    alignment = AlignmentSearch()

    def __init__(self) -> None:
        super().__init__("palm", FAKE_SHA)

    def embed_roi(self, image: np.ndarray) -> np.ndarray:
        return self.embed_crop(image)

    def probe_vectors(self, image: np.ndarray, *, roi: bool = False) -> AlignedVectors:
        assert roi, "calibration images are ROIs"
        variants = [self.embed_crop(np.roll(image, shift, axis=1)) for shift in (-1, 1)]
        return AlignedVectors(self.embed_crop(image), np.stack(variants))


def palm_calibration(directory: Path, search: bool) -> Path:
    rng = np.random.default_rng(0)
    result = calibrate_scores(
        np.clip(rng.normal(0.7, 0.1, 2_000), -1, 1),
        rng.normal(0.1, 0.1, 20_000),
        modality="palm",
        encoder=EncoderInfo(name="compcode", sha256=FAKE_SHA),
        benchmark="tongji",
        bootstrap=False,
        alignment_search=search,
    )
    return result.apply(directory, plot=False)[0]


@pytest.fixture()
def palm_config(config: KioskConfig, tmp_path: Path) -> KioskConfig:
    config.paths.calibration_dir = tmp_path / "calibration"
    config.gate.palm_calibration = "palm-tongji.json"
    return config


def test_a_palm_calibration_is_used_only_with_the_search_setting_it_was_made_with(palm_config: KioskConfig) -> None:
    palm_calibration(palm_config.paths.calibration_dir, search=False)
    assert palm_config.palm.alignment_search  # the default
    without = r"made without the re-alignment search but palm\.alignment_search is on"
    with pytest.raises(CalibrationError, match=without):
        active_threshold(palm_config, "palm", FAKE_SHA)
    palm_calibration(palm_config.paths.calibration_dir, search=True)
    assert 0.3 < active_threshold(palm_config, "palm", FAKE_SHA) < 0.6
    palm_config.palm.alignment_search = False
    with pytest.raises(CalibrationError, match=r"made with the re-alignment search but palm\.alignment_search is off"):
        active_threshold(palm_config, "palm", FAKE_SHA)


def test_the_search_scores_every_ordered_pair_as_the_gate_does(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=5, per_identity=3)
    embedder = ShiftingPalmEmbedder()
    collected = collect_scores(DataSpec(folder), embedder)
    plain = collect_scores(DataSpec(folder), PixelEmbedder("palm"))
    assert collected.alignment_search and not plain.alignment_search
    assert (collected.genuine.size, collected.impostor.size) == (2 * plain.genuine.size, 2 * plain.impostor.size)
    paths = sorted(folder.glob("images/*.png"))
    names = [path.name.rsplit("_", 1)[0] for path in paths]
    now = datetime.now(UTC)
    templates = [
        Template(i, i, "palm", embedder.embed_crop(cv2.imread(str(p))), FAKE_SHA, now) for i, p in enumerate(paths)
    ]
    genuine, impostor = [], []
    for i, path in enumerate(paths):
        vectors = embedder.probe_vectors(cv2.imread(str(path)), roi=True)
        probe = Probe("palm", vectors.vector, FAKE_SHA, 0.0, variants=vectors.variants)
        for j, score in user_scores(probe, [t for t in templates if t.user_id != i]).scores.items():
            (genuine if names[j] == names[i] else impostor).append(score)
    np.testing.assert_allclose(np.sort(collected.genuine), np.sort(genuine), atol=1e-5)
    np.testing.assert_allclose(np.sort(collected.impostor), np.sort(impostor), atol=1e-5)
    assert collected.impostor.max() > plain.impostor.max()  # the search raises impostor scores too
    result = run_calibration(DataSpec(folder), embedder, encoder_name="compcode", bootstrap=False)
    assert result.calibration.alignment_search
    assert result.with_rule("far").calibration.alignment_search


def test_a_pairs_file_cannot_be_scored_with_the_search(image_folder: MakeFolder) -> None:
    folder = image_folder(identities=3, per_identity=2)
    (folder / "pairs.txt").write_text("1\t1\n")
    with pytest.raises(CalibrationError, match="ordered pair"):
        collect_scores(DataSpec(folder, pairs_file=folder / "pairs.txt"), ShiftingPalmEmbedder())


def test_fused_probes_score_the_best_over_their_variants() -> None:
    vectors, names = noisy_identities(20, 9, noise=0.8)
    plain = fused_trials(vectors, names, (1, 3), draws=5)
    same = fused_trials(vectors, names, (1, 3), draws=5, variants=vectors[:, None, :])
    noise = np.random.default_rng(1).normal(size=(len(vectors), 4, vectors.shape[1])).astype(np.float32)
    searched = fused_trials(vectors, names, (1, 3), draws=5, variants=noise)
    for k in (1, 3):
        np.testing.assert_allclose(same[k].scores.genuine, plain[k].scores.genuine, atol=1e-6)
        assert np.all(searched[k].scores.genuine >= plain[k].scores.genuine - 1e-6)
        assert searched[k].scores.impostor.mean() > plain[k].scores.impostor.mean()


def test_a_sensitive_palm_file_counts_only_with_its_search_setting(config: KioskConfig, tmp_path: Path) -> None:
    path = write_file(tmp_path, "palm", 0.45, sha=FAKE_SHA)  # made without the search
    assert calibrated_sensitive_threshold(tmp_path, "palm", FAKE_SHA) == 0.45
    assert calibrated_sensitive_threshold(tmp_path, "palm", FAKE_SHA, alignment_search=True) is None
    path.write_text(path.read_text().replace('"alignment_search":false', '"alignment_search":true'))
    assert calibrated_sensitive_threshold(tmp_path, "palm", FAKE_SHA, alignment_search=True) == 0.45
    config.paths.calibration_dir = tmp_path
    assert sensitive_threshold(config, "palm", FAKE_SHA, 0.4) == 0.45
    assert sensitive_path(tmp_path, "palm") == path


def test_palm_site_calibration_is_refused_with_the_search(config: KioskConfig) -> None:
    with pytest.raises(CalibrationError, match="re-align"):
        calibrate_site(
            config,
            [],
            modality="palm",
            encoder=EncoderInfo(name="compcode", sha256=FAKE_SHA),
            target_far=1e-3,
            command="test",
        )


def test_the_shipped_palm_calibration_was_made_with_the_search_the_kiosk_ships() -> None:
    from kiosk.calibration import load_calibration
    from kiosk.config import PROJECT_ROOT, PalmConfig

    shipped = load_calibration(PROJECT_ROOT / "calibration" / KioskConfig().gate.palm_calibration, "palm")
    assert shipped.alignment_search == PalmConfig().alignment_search is True
    assert shipped.rule == "strict" and shipped.target_far == 1e-4
