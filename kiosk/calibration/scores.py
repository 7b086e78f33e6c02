"""Genuine/impostor score statistics: densities, the tau_D intersection rule, EER, target-FAR thresholds.

A comparison is accepted when its cosine score is >= the threshold (the gate's rule), so at threshold t:
FAR(t) = #(impostor >= t) / #impostor and FRR(t) = #(genuine < t) / #genuine. Every rate is computed on
all scores; densities use a binned Gaussian KDE (linear binning + FFT convolution), which is exact to the
grid resolution and costs O(n + grid) so millions of impostor scores need no subsampling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.signal import fftconvolve
from scipy.stats import beta

from kiosk.errors import CalibrationError

MIN_SCORES = 2
COSINE_TOLERANCE = 1e-3
_GRID_STEPS_PER_BANDWIDTH = 8
_MAX_GRID = 1 << 16
_KERNEL_HALF_WIDTH = 5.0
_NEGLIGIBLE_DENSITY = 1e-6  # relative to the taller peak: below this both densities are numerically zero


@dataclass(frozen=True)
class RateCount:
    """errors out of trials, with a 95 % Clopper-Pearson interval."""

    errors: int
    trials: int

    @property
    def value(self) -> float:
        return self.errors / self.trials if self.trials else math.nan

    @property
    def ci95(self) -> tuple[float, float]:
        return clopper_pearson(self.errors, self.trials)


@dataclass(frozen=True)
class Density:
    grid: np.ndarray
    values: np.ndarray
    bandwidth: float

    @property
    def mode(self) -> float:
        return float(self.grid[int(np.argmax(self.values))])


@dataclass(frozen=True)
class Intersection:
    tau_d: float
    crossings: list[float]
    genuine_mode: float
    impostor_mode: float


@dataclass(frozen=True)
class TargetFarPoint:
    target: float
    threshold: float
    far: RateCount
    frr: RateCount
    resolved: bool
    impostors_needed: int


@dataclass(frozen=True)
class ScoreSets:
    """Validated, sorted genuine and impostor cosine scores."""

    genuine: np.ndarray
    impostor: np.ndarray

    @classmethod
    def from_arrays(cls, genuine: np.ndarray, impostor: np.ndarray) -> ScoreSets:
        checked_genuine = _checked("genuine", genuine)
        checked_impostor = _checked("impostor", impostor)
        return cls(np.sort(checked_genuine), np.sort(checked_impostor))

    def far(self, threshold: float) -> RateCount:
        accepted = self.impostor.size - int(np.searchsorted(self.impostor, threshold, side="left"))
        return RateCount(accepted, int(self.impostor.size))

    def frr(self, threshold: float) -> RateCount:
        rejected = int(np.searchsorted(self.genuine, threshold, side="left"))
        return RateCount(rejected, int(self.genuine.size))


@dataclass(frozen=True)
class ScoreAnalysis:
    scores: ScoreSets
    genuine_density: Density
    impostor_density: Density
    intersection: Intersection
    eer: float
    eer_threshold: float
    eer_ci95: tuple[float, float] | None
    far_targets: dict[float, TargetFarPoint] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _checked(name: str, scores: np.ndarray) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64).ravel()
    if values.size == 0:
        what = "same-identity" if name == "genuine" else "different-identity"
        raise CalibrationError(
            f"no {name} pairs: the data gives no {what} comparisons",
            "use a data set with at least two identities and two images of some identity",
        )
    if values.size < MIN_SCORES:
        raise CalibrationError(f"only {values.size} {name} score(s): too few to estimate a density", "use more images")
    if not np.all(np.isfinite(values)):
        bad = int(np.count_nonzero(~np.isfinite(values)))
        raise CalibrationError(f"{bad} {name} score(s) are NaN or infinite", "check the encoder output")
    if values.min() < -1 - COSINE_TOLERANCE or values.max() > 1 + COSINE_TOLERANCE:
        raise CalibrationError(
            f"{name} scores outside [-1, 1] (min {values.min():.3f}, max {values.max():.3f})",
            "scores must be cosine similarities of L2-normalised embeddings",
        )
    if float(values.max() - values.min()) == 0.0:
        raise CalibrationError(
            f"all {values.size} {name} scores are identical ({values[0]:.4f})",
            "the encoder output does not vary; check the model and the images",
        )
    return values


def clopper_pearson(errors: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    if trials <= 0:
        return (math.nan, math.nan)
    alpha = 1 - confidence
    lower = 0.0 if errors == 0 else float(beta.ppf(alpha / 2, errors, trials - errors + 1))
    upper = 1.0 if errors == trials else float(beta.ppf(1 - alpha / 2, errors + 1, trials - errors))
    return (lower, upper)


def silverman_bandwidth(scores: np.ndarray) -> float:
    spread = float(np.std(scores, ddof=1))
    q25, q75 = np.percentile(scores, [25, 75])
    iqr_spread = float(q75 - q25) / 1.349
    if iqr_spread > 0:
        spread = min(spread, iqr_spread)
    return 0.9 * spread * scores.size ** (-0.2)


def score_grid(genuine: np.ndarray, impostor: np.ndarray, bandwidths: tuple[float, float]) -> np.ndarray:
    margin = _KERNEL_HALF_WIDTH * max(bandwidths)
    low = min(genuine[0], impostor[0]) - margin
    high = max(genuine[-1], impostor[-1]) + margin
    step = max(min(bandwidths) / _GRID_STEPS_PER_BANDWIDTH, (high - low) / (_MAX_GRID - 1))
    return np.arange(low, high + step, step)


def binned_kde(scores: np.ndarray, grid: np.ndarray, bandwidth: float) -> np.ndarray:
    """Gaussian KDE of `scores` evaluated on the uniform `grid` (linear binning, FFT convolution)."""
    step = float(grid[1] - grid[0])
    position = (scores - grid[0]) / step
    left = np.clip(np.floor(position).astype(np.int64), 0, grid.size - 2)
    right_weight = position - left
    weights = np.bincount(left, weights=1.0 - right_weight, minlength=grid.size)
    weights += np.bincount(left + 1, weights=right_weight, minlength=grid.size)
    half = max(1, math.ceil(_KERNEL_HALF_WIDTH * bandwidth / step))
    offsets = np.arange(-half, half + 1) * step
    kernel = np.exp(-0.5 * (offsets / bandwidth) ** 2)
    density = fftconvolve(weights[: grid.size], kernel, mode="same")
    density = np.clip(density, 0.0, None) / (scores.size * bandwidth * math.sqrt(2 * math.pi))
    return np.asarray(density, dtype=np.float64)


def estimate_densities(scores: ScoreSets) -> tuple[Density, Density]:
    bandwidth_genuine = silverman_bandwidth(scores.genuine)
    bandwidth_impostor = silverman_bandwidth(scores.impostor)
    grid = score_grid(scores.genuine, scores.impostor, (bandwidth_genuine, bandwidth_impostor))
    genuine = Density(grid, binned_kde(scores.genuine, grid, bandwidth_genuine), bandwidth_genuine)
    impostor = Density(grid, binned_kde(scores.impostor, grid, bandwidth_impostor), bandwidth_impostor)
    return genuine, impostor


def density_crossings(genuine: Density, impostor: Density) -> tuple[list[float], list[float]]:
    """All crossings of the two densities, and the rising ones (impostor above below t, genuine above)."""
    difference = genuine.values - impostor.values
    negligible = _NEGLIGIBLE_DENSITY * max(genuine.values.max(), impostor.values.max())
    significant = np.flatnonzero(np.abs(difference) > negligible)
    signs = np.sign(difference[significant])
    changes = np.flatnonzero(signs[:-1] != signs[1:])
    crossings: list[float] = []
    rising: list[float] = []
    for change in changes:
        before, after = significant[change], significant[change + 1]
        d0, d1 = difference[before], difference[after]
        x0, x1 = genuine.grid[before], genuine.grid[after]
        point = float(x0 + (x1 - x0) * d0 / (d0 - d1))
        crossings.append(point)
        if d0 < 0 < d1:
            rising.append(point)
    return crossings, rising


def intersection_between_modes(genuine: Density, impostor: Density) -> Intersection:
    """tau_D: where the densities cross between the impostor mode and the genuine mode (seed paper's rule).

    Of several rising crossings between the modes, the one with the smallest density-estimated
    FAR + FRR is taken: only rising crossings are minima of that total error.
    """
    genuine_mode, impostor_mode = genuine.mode, impostor.mode
    crossings, rising = density_crossings(genuine, impostor)
    if genuine_mode <= impostor_mode:
        raise CalibrationError(
            f"the genuine score mode ({genuine_mode:.3f}) is not above the impostor mode ({impostor_mode:.3f})",
            "the encoder does not separate these identities; check the model, the images and the labels",
        )
    between = [x for x in rising if impostor_mode < x < genuine_mode]
    if not between:
        found = ", ".join(f"{x:.3f}" for x in crossings) or "none"
        raise CalibrationError(
            f"the genuine and impostor densities do not cross between their modes "
            f"(impostor {impostor_mode:.3f}, genuine {genuine_mode:.3f}; crossings: {found})",
            "tau_D is undefined for these scores; use --rule eer or --rule far",
        )
    step = float(genuine.grid[1] - genuine.grid[0])
    genuine_cdf = np.cumsum(genuine.values) * step
    impostor_cdf = np.cumsum(impostor.values) * step

    def total_error(x: float) -> float:
        index = int(np.searchsorted(genuine.grid, x))
        return float(genuine_cdf[index] + (impostor_cdf[-1] - impostor_cdf[index]))

    tau_d = min(between, key=total_error)
    return Intersection(tau_d, crossings, genuine_mode, impostor_mode)


def equal_error_rate(scores: ScoreSets) -> tuple[float, float]:
    """(EER, threshold): the candidate threshold where |FAR - FRR| is smallest; EER = their mean there."""
    candidates = np.unique(np.concatenate([scores.genuine, scores.impostor]))
    far = (scores.impostor.size - np.searchsorted(scores.impostor, candidates, side="left")) / scores.impostor.size
    frr = np.searchsorted(scores.genuine, candidates, side="left") / scores.genuine.size
    best = int(np.argmin(np.abs(far - frr)))
    return float((far[best] + frr[best]) / 2), float(candidates[best])


def eer_bootstrap_ci(scores: ScoreSets, resamples: int = 200, bins: int = 4000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the EER, resampling binned counts (multinomial) for speed."""
    edges = np.linspace(
        min(scores.genuine[0], scores.impostor[0]), max(scores.genuine[-1], scores.impostor[-1]), bins + 1
    )
    genuine_counts = np.histogram(scores.genuine, edges)[0]
    impostor_counts = np.histogram(scores.impostor, edges)[0]
    rng = np.random.default_rng(seed)
    eers = np.empty(resamples)
    for index in range(resamples):
        genuine_sample = rng.multinomial(scores.genuine.size, genuine_counts / scores.genuine.size)
        impostor_sample = rng.multinomial(scores.impostor.size, impostor_counts / scores.impostor.size)
        frr = np.concatenate([[0], np.cumsum(genuine_sample)]) / scores.genuine.size
        far = 1 - np.concatenate([[0], np.cumsum(impostor_sample)]) / scores.impostor.size
        best = int(np.argmin(np.abs(far - frr)))
        eers[index] = (far[best] + frr[best]) / 2
    low, high = np.percentile(eers, [2.5, 97.5])
    return float(low), float(high)


def threshold_at_far(scores: ScoreSets, target: float) -> TargetFarPoint:
    """Lowest threshold whose FAR <= target. Unresolved when fewer than 1/target impostors exist."""
    if not 0 < target < 1:
        raise CalibrationError(f"target FAR {target} is not between 0 and 1", "use e.g. --target-far 1e-4")
    count = scores.impostor.size
    needed = math.ceil(1 / target)
    allowed = math.floor(target * count)
    pivot = float(scores.impostor[count - allowed - 1])
    threshold = float(np.nextafter(pivot, np.inf))
    return TargetFarPoint(
        target=target,
        threshold=threshold,
        far=scores.far(threshold),
        frr=scores.frr(threshold),
        resolved=count >= needed,
        impostors_needed=needed,
    )


def analyse(scores: ScoreSets, far_targets: tuple[float, ...] = (1e-3, 1e-4), bootstrap: bool = True) -> ScoreAnalysis:
    """All figures behind a calibration; raises CalibrationError instead of returning a meaningless tau."""
    genuine_density, impostor_density = estimate_densities(scores)
    intersection = intersection_between_modes(genuine_density, impostor_density)
    eer, eer_threshold = equal_error_rate(scores)
    eer_ci = eer_bootstrap_ci(scores) if bootstrap else None
    targets = {target: threshold_at_far(scores, target) for target in sorted(set(far_targets), reverse=True)}
    warnings: list[str] = []
    for point in targets.values():
        if not point.resolved:
            warnings.append(
                f"FAR {point.target:g} is not resolved: it needs >= {point.impostors_needed:,} impostor pairs, "
                f"have {scores.impostor.size:,}; its threshold is just above the highest impostor score"
            )
    if scores.genuine.size < 100:
        warnings.append(f"only {scores.genuine.size} genuine pairs: FRR and tau_D are uncertain")
    return ScoreAnalysis(
        scores=scores,
        genuine_density=genuine_density,
        impostor_density=impostor_density,
        intersection=intersection,
        eer=eer,
        eer_threshold=eer_threshold,
        eer_ci95=eer_ci,
        far_targets=targets,
        warnings=warnings,
    )
