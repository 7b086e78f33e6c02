"""The administrator's picture: both score histograms with their densities, the thresholds, and a DET curve.

Built on `matplotlib.figure.Figure` without pyplot, so it renders with Agg here and embeds in the Qt
admin screen (FigureCanvasQTAgg) without touching global backend state.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from kiosk.calibration.run import CalibrationResult

GENUINE_COLOUR = "#2a9d8f"
IMPOSTOR_COLOUR = "#e76f51"
_MARKERS = {"tau_d": ("tau_D", "#264653", "--"), "eer": ("EER", "#6d597a", ":"), "far": ("target FAR", "#b56576", "-.")}


def _det_curve(result: CalibrationResult, points: int = 600) -> tuple[np.ndarray, np.ndarray]:
    scores = result.analysis.scores
    low = min(scores.genuine[0], scores.impostor[0])
    high = max(scores.genuine[-1], scores.impostor[-1])
    thresholds = np.unique(
        np.concatenate([np.linspace(low, high, points), np.quantile(scores.impostor, 1 - np.logspace(-6, 0, points))])
    )
    far = (scores.impostor.size - np.searchsorted(scores.impostor, thresholds, side="left")) / scores.impostor.size
    frr = np.searchsorted(scores.genuine, thresholds, side="left") / scores.genuine.size
    return far, frr


def build_figure(result: CalibrationResult) -> Figure:
    calibration = result.calibration
    analysis = result.analysis
    figure = Figure(figsize=(12, 4.8), dpi=100, layout="constrained")
    histogram, det = figure.subplots(1, 2, width_ratios=[1.6, 1])
    bins = np.linspace(analysis.genuine_density.grid[0], analysis.genuine_density.grid[-1], 120)
    histogram.hist(
        analysis.scores.impostor,
        bins=bins,
        density=True,
        alpha=0.35,
        color=IMPOSTOR_COLOUR,
        label=f"impostor (n={calibration.counts.impostor:,})",
    )
    histogram.hist(
        analysis.scores.genuine,
        bins=bins,
        density=True,
        alpha=0.35,
        color=GENUINE_COLOUR,
        label=f"genuine (n={calibration.counts.genuine:,})",
    )
    histogram.plot(analysis.impostor_density.grid, analysis.impostor_density.values, color=IMPOSTOR_COLOUR, lw=1.6)
    histogram.plot(analysis.genuine_density.grid, analysis.genuine_density.values, color=GENUINE_COLOUR, lw=1.6)
    for rule, (label, colour, style) in _MARKERS.items():
        point = calibration.operating_points[rule]
        label = f"{label} {calibration.target_far:g}" if rule == "far" else label
        histogram.axvline(
            point.threshold,
            color=colour,
            ls=style,
            lw=1.2,
            label=f"{label} {point.threshold:.3f} (FAR {point.far.value:.2e}, FRR {point.frr.value:.2%})",
        )
    histogram.axvline(
        calibration.threshold,
        color="black",
        lw=2.2,
        label=f"chosen tau {calibration.threshold:.3f} ({calibration.rule})",
    )
    histogram.set_xlabel("cosine similarity")
    histogram.set_ylabel("density")
    histogram.set_title(
        f"{calibration.modality} / {calibration.benchmark} ({calibration.dataset.protocol}) — "
        f"encoder {calibration.encoder.name} {calibration.encoder.sha256[:8]}"
    )
    histogram.legend(fontsize=8, loc="best", framealpha=0.85)

    far, frr = _det_curve(result)
    floor_far = 0.5 / calibration.counts.impostor
    floor_frr = 0.5 / calibration.counts.genuine
    det.loglog(np.maximum(far, floor_far), np.maximum(frr, floor_frr), color="#1d3557", lw=1.5)
    for rule, (label, colour, _style) in {**_MARKERS, "strict": ("strict", "black", "-")}.items():
        point = calibration.operating_points[rule]
        det.plot(
            max(point.far.value, floor_far),
            max(point.frr.value, floor_frr),
            "o",
            color=colour,
            label=f"{label}{'' if point.resolved else ' (unresolved)'}",
        )
    det.plot([floor_far, 1], [floor_far, 1], color="grey", lw=0.6, ls=":")
    det.set_xlim(floor_far, 1)
    det.set_ylim(floor_frr, 1)
    det.set_xlabel("false accept rate (FAR)")
    det.set_ylabel("false reject rate (FRR)")
    det.set_title(f"DET — EER {calibration.figures.eer:.2%}")
    det.grid(True, which="both", alpha=0.25)
    det.legend(fontsize=8, loc="lower left")
    return figure


def save_plot(result: CalibrationResult, path: Path) -> Path:
    figure = build_figure(result)
    FigureCanvasAgg(figure)
    temporary = path.with_name(path.name + ".tmp.png")
    figure.savefig(temporary, dpi=100)
    temporary.replace(path)
    return path
