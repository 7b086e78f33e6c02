"""RF-Mem's adaptive choice between the familiarity and recollection paths."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kiosk.retrieval.results import FamiliaritySignal, Path
from kiosk.retrieval.tuning import RetrievalTuning


def familiarity_signal(similarities: Sequence[float], k_probe: int, softmax_lambda: float) -> FamiliaritySignal:
    """Mean s_hat of the top k_probe similarities and entropy H of softmax(lambda * (s - max s)) in nats."""
    top = np.sort(np.asarray(similarities, dtype=np.float64))[::-1][:k_probe]
    if top.size == 0:
        return FamiliaritySignal(0.0, 0.0, 0)
    logits = softmax_lambda * (top - top.max())
    weights = np.exp(logits)
    weights /= weights.sum()
    nonzero = weights[weights > 0]
    entropy = max(0.0, float(-(nonzero * np.log(nonzero)).sum()))
    return FamiliaritySignal(float(top.mean()), entropy, int(top.size))


def choose_path(signal: FamiliaritySignal, tuning: RetrievalTuning) -> Path:
    """Familiarity when the match is confident (high mean) or peaked (low entropy), else recollection.

    The mean thresholds decide first; between them the entropy does. The shipped thresholds come from
    calibration questions (kiosk/retrieval/thresholds.py).
    """
    chosen = recollects(signal, tuning.theta_low, tuning.theta_high, tuning.tau_entropy)
    return "recollection" if chosen else "familiarity"


def recollects(signal: FamiliaritySignal, theta_low: float, theta_high: float, tau_entropy: float) -> bool:
    if signal.mean_similarity >= theta_high:
        return False
    if signal.mean_similarity <= theta_low:
        return True
    return signal.entropy > tau_entropy


def mixing_alpha(k: int) -> float:
    """alpha(K) = 0.3 + 0.5 * min(1, K / 50): larger budgets keep the mixed queries nearer the question."""
    return 0.3 + 0.5 * min(1.0, k / 50.0)
