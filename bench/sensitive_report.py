"""The sensitive-threshold bench's error rates: counted with their 95 % interval, and printed as its table cells."""

from __future__ import annotations

from kiosk.calibration.fused_trials import ChosenThreshold
from kiosk.calibration.schema import FusedPoint, Rate
from kiosk.calibration.scores import RateCount


def counted_rate(errors: int, trials: int) -> Rate:
    count = RateCount(errors, trials)
    return Rate(value=count.value, errors=errors, trials=trials, ci95=count.ci95)


def percent_cell(rate: Rate) -> str:
    return f"{100 * rate.value:.2f} % ({rate.errors}/{rate.trials})"


def far_cell(rate: Rate) -> str:
    return f"{rate.value:.1e} ({rate.errors}/{rate.trials})"


def rows_for(
    modality: str, dataset: str, tau: float, chosen: ChosenThreshold, tau_rows: list[FusedPoint]
) -> list[list[str]]:
    rows = []
    for point, at_tau in zip(chosen.trade_off, tau_rows, strict=True):
        rows.append(
            [
                f"{modality}, {dataset}",
                str(point.frames),
                f"{point.threshold_at_target:.4f}",
                f"{chosen.threshold:.4f}",
                far_cell(point.far),
                percent_cell(point.frr),
                f"{tau:.4f}: {far_cell(at_tau.far)}, {percent_cell(at_tau.frr)}",
            ]
        )
    return rows
