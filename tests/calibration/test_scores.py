"""The numerics behind tau: the density-intersection rule, EER, target-FAR thresholds, intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from kiosk.calibration.scores import (
    Density,
    ScoreSets,
    analyse,
    clopper_pearson,
    equal_error_rate,
    estimate_densities,
    intersection_between_modes,
    threshold_at_far,
)
from kiosk.errors import CalibrationError


class _Cosines:
    """Gaussian score samples clipped to the cosine range (the far tails touch 1.0 at these sizes)."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def normal(self, mean: float, sd: float, size: int) -> np.ndarray:
        return np.clip(self._rng.normal(mean, sd, size), -1.0, 1.0)


def _rng(seed: int = 7) -> _Cosines:
    return _Cosines(seed)


def _tau_d(genuine: np.ndarray, impostor: np.ndarray) -> float:
    scores = ScoreSets.from_arrays(genuine, impostor)
    return intersection_between_modes(*estimate_densities(scores)).tau_d


def _gaussian_crossing(mu_g: float, sd_g: float, mu_i: float, sd_i: float) -> float:
    return float(brentq(lambda x: norm.pdf(x, mu_g, sd_g) - norm.pdf(x, mu_i, sd_i), mu_i, mu_g))


def test_equal_variance_gaussians_cross_at_the_midpoint() -> None:
    rng = _rng()
    tau = _tau_d(rng.normal(0.7, 0.08, 20_000), rng.normal(0.2, 0.08, 20_000))
    assert tau == pytest.approx(0.45, abs=0.01)


def test_set_sizes_do_not_move_the_intersection() -> None:
    # Densities are normalised per class, so 100x more impostors must not pull tau_D towards the genuine side.
    rng = _rng(3)
    tau = _tau_d(rng.normal(0.7, 0.08, 2_000), rng.normal(0.2, 0.08, 400_000))
    assert tau == pytest.approx(0.45, abs=0.015)


def test_unequal_variances_match_the_analytic_crossing() -> None:
    rng = _rng(4)
    expected = _gaussian_crossing(0.65, 0.12, 0.15, 0.06)
    tau = _tau_d(rng.normal(0.65, 0.12, 30_000), rng.normal(0.15, 0.06, 200_000))
    assert tau == pytest.approx(expected, abs=0.01)
    assert abs(expected - 0.4) > 0.03  # the case really differs from the midpoint


def test_heavy_overlap_still_finds_the_midpoint() -> None:
    rng = _rng(5)
    tau = _tau_d(rng.normal(0.45, 0.1, 60_000), rng.normal(0.35, 0.1, 60_000))
    assert tau == pytest.approx(0.40, abs=0.015)


def test_bimodal_impostors_use_the_principal_mode() -> None:
    # 85 % of impostors near 0.1, a 15 % look-alike bump near 0.45: the crossing lies above the bump.
    rng = _rng(6)
    main, bump = 170_000, 30_000
    impostor = np.concatenate([rng.normal(0.1, 0.08, main), rng.normal(0.45, 0.04, bump)])
    genuine = rng.normal(0.7, 0.08, 20_000)

    def impostor_pdf(x: float) -> float:
        return float(0.85 * norm.pdf(x, 0.1, 0.08) + 0.15 * norm.pdf(x, 0.45, 0.04))

    expected = float(brentq(lambda x: norm.pdf(x, 0.7, 0.08) - impostor_pdf(x), 0.5, 0.7))
    tau = _tau_d(genuine, impostor)
    assert tau == pytest.approx(expected, abs=0.01)
    assert tau > 0.5  # not a crossing near the secondary bump


def test_several_crossings_between_modes_pick_the_smallest_total_error() -> None:
    # A tall narrow impostor bump inside the genuine range creates rising crossings near 0.33 and 0.54.
    rng = _rng(8)
    impostor = np.concatenate([rng.normal(0.1, 0.08, 240_000), rng.normal(0.5, 0.02, 60_000)])
    genuine = rng.normal(0.6, 0.1, 60_000)
    weights, means, sds = (0.8, 0.2), (0.1, 0.5), (0.08, 0.02)

    def difference(x: float) -> float:
        impostor_pdf = sum(w * norm.pdf(x, m, s) for w, m, s in zip(weights, means, sds, strict=True))
        return float(norm.pdf(x, 0.6, 0.1) - impostor_pdf)

    def total_error(x: float) -> float:
        far = sum(w * norm.sf(x, m, s) for w, m, s in zip(weights, means, sds, strict=True))
        return float(norm.cdf(x, 0.6, 0.1) + far)

    low = float(brentq(difference, 0.2, 0.42))
    high = float(brentq(difference, 0.51, 0.59))
    expected = min((low, high), key=total_error)
    scores = ScoreSets.from_arrays(genuine, impostor)
    intersection = intersection_between_modes(*estimate_densities(scores))
    assert len(intersection.crossings) >= 3
    assert intersection.tau_d == pytest.approx(expected, abs=0.01)


def test_genuine_mode_below_impostor_mode_is_an_error() -> None:
    rng = _rng(9)
    with pytest.raises(CalibrationError, match="not above the impostor mode"):
        _tau_d(rng.normal(0.2, 0.1, 5_000), rng.normal(0.6, 0.1, 5_000))


def test_no_crossing_between_the_modes_is_an_error() -> None:
    # A wide genuine density whose mode sits under a tall impostor peak: the only rising crossing is above it.
    grid = np.linspace(-0.5, 1.5, 4001)
    genuine = Density(grid, norm.pdf(grid, 0.5, 0.3), 0.01)
    impostor = Density(grid, norm.pdf(grid, 0.45, 0.05), 0.01)
    with pytest.raises(CalibrationError, match="do not cross between their modes"):
        intersection_between_modes(genuine, impostor)


def test_eer_on_a_small_exact_set() -> None:
    scores = ScoreSets.from_arrays(np.array([0.5, 0.6, 0.7, 0.8]), np.array([0.1, 0.2, 0.3, 0.55]))
    eer, threshold = equal_error_rate(scores)
    assert eer == 0.25
    assert threshold == 0.55


def test_eer_of_two_gaussians_matches_theory() -> None:
    rng = _rng(11)
    scores = ScoreSets.from_arrays(rng.normal(0.7, 0.1, 50_000), rng.normal(0.3, 0.1, 50_000))
    eer, threshold = equal_error_rate(scores)
    assert eer == pytest.approx(norm.cdf(-2.0), abs=0.002)
    assert threshold == pytest.approx(0.5, abs=0.01)


def test_threshold_at_far_counts_exactly() -> None:
    scores = ScoreSets.from_arrays(np.array([0.99, 0.995, 0.9991]), np.arange(10_000) / 10_000)
    point = threshold_at_far(scores, 1e-3)
    assert point.resolved
    assert point.far.errors == 10 and point.far.trials == 10_000
    assert 0.9989 < point.threshold <= 0.999
    assert point.frr.errors == 2  # only 0.9991 is at or above the threshold


def test_threshold_at_far_flags_too_few_impostors() -> None:
    rng = _rng(12)
    impostor = rng.normal(0.2, 0.1, 5_000)
    scores = ScoreSets.from_arrays(rng.normal(0.7, 0.1, 3_000), impostor)
    point = threshold_at_far(scores, 1e-4)
    assert not point.resolved
    assert point.impostors_needed == 10_000
    assert point.far.errors == 0 and point.threshold > impostor.max()
    analysis = analyse(scores, (1e-3, 1e-4), bootstrap=False)
    assert any("FAR 0.0001 is not resolved" in warning for warning in analysis.warnings)


def test_clopper_pearson_known_values() -> None:
    assert clopper_pearson(0, 10) == pytest.approx((0.0, 0.3085), abs=1e-4)
    low, high = clopper_pearson(5, 10)
    assert (low, high) == pytest.approx((0.1871, 0.8129), abs=1e-4)
    assert all(math.isnan(v) for v in clopper_pearson(0, 0))


def test_bootstrap_interval_contains_the_eer() -> None:
    rng = _rng(13)
    analysis = analyse(ScoreSets.from_arrays(rng.normal(0.7, 0.1, 3_000), rng.normal(0.3, 0.1, 3_000)))
    assert analysis.eer_ci95 is not None
    low, high = analysis.eer_ci95
    assert low <= analysis.eer <= high
    assert 0 < high - low < 0.02


@pytest.mark.parametrize(
    ("genuine", "impostor", "message"),
    [
        (np.array([]), np.array([0.1, 0.2]), "no genuine pairs"),
        (np.array([0.8, 0.9]), np.array([]), "no impostor pairs"),
        (np.array([0.8]), np.array([0.1, 0.2]), "too few"),
        (np.array([0.8, np.nan]), np.array([0.1, 0.2]), "NaN"),
        (np.array([0.8, 1.7]), np.array([0.1, 0.2]), "outside"),
        (np.array([0.8, 0.8, 0.8]), np.array([0.1, 0.2]), "identical"),
    ],
)
def test_bad_score_sets_are_refused(genuine: np.ndarray, impostor: np.ndarray, message: str) -> None:
    with pytest.raises(CalibrationError, match=message):
        ScoreSets.from_arrays(genuine, impostor)
