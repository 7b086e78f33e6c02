"""Adaptive familiarity/recollection thresholds calibrated on the text encoder's own scale, from outcomes.

Cosine scores of a sentence encoder on dialogue turns sit far below the seed's 0.75 (MiniLM's median
mean-top-15 similarity on LoCoMo is about 0.45), so fixed thresholds sent nearly every question to
recollection. The thresholds are instead chosen on calibration questions whose evidence is known: for each,
its familiarity signal (mean and entropy of the top k_probe similarities) and the recall gain of recollection
over familiarity. Candidate thresholds are quantiles of the calibration signals (so they follow the encoder's
scale); the rule kept is the one with the largest total gain whose gain is >= 0 on every category, and when
no rule gains at all the thresholds say "never" (theta_high at cosine's floor: familiarity always runs).
Measured on LoCoMo (bench/results/hybrid.md), recollection loses to familiarity on every category at K=10 and
K=30, dense or fused, and no candidate rule gains on the calibration split: the shipped MiniLM calibration is
"never" (adaptive = familiarity on the held-out conversations, every category).
The result is stored per encoder (sha256) under calibration/.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.retrieval.adaptive import recollects
from kiosk.retrieval.results import FamiliaritySignal
from kiosk.retrieval.tuning import RetrievalTuning

NEVER = -1.0
EncoderCalibration = TypeVar("EncoderCalibration", bound=BaseModel)
"""Cosine's floor: with theta_high here every mean similarity is at or above it, so familiarity always runs."""
MEAN_QUANTILES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
ENTROPY_QUANTILES = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
"""Where candidate thresholds are read on the calibration signals."""


@dataclass(frozen=True)
class Outcome:
    """One calibration question: its familiarity signal, its category and recall(recollection) - recall(familiarity)."""

    signal: FamiliaritySignal
    category: str
    gain: float


@dataclass(frozen=True)
class Rule:
    """Adaptive thresholds: recollection at mean <= theta_low, or below theta_high with entropy > tau_entropy."""

    theta_low: float
    theta_high: float
    tau_entropy: float

    def recollects(self, signal: FamiliaritySignal) -> bool:
        """The adaptive choice (kiosk.retrieval.adaptive.choose_path) under these thresholds."""
        return recollects(signal, self.theta_low, self.theta_high, self.tau_entropy)


class AdaptiveCalibration(BaseModel):
    """Thresholds of RF-Mem's adaptive choice for one text encoder, with how they were made."""

    model_config = ConfigDict(extra="forbid")

    encoder: str = Field(description="Text encoder name.")
    encoder_sha256: str = Field(min_length=64, max_length=64, description="sha256 identifying the encoder weights.")
    k_probe: int = Field(ge=1, description="Similarities the familiarity signal averages.")
    softmax_lambda: float = Field(gt=0, description="Softmax inverse temperature of the entropy.")
    theta_low: float = Field(description="Mean similarity at or below which recollection runs.")
    theta_high: float = Field(description="Mean similarity at or above which familiarity runs.")
    tau_entropy: float = Field(gt=0, description="Entropy above which recollection runs between the two.")
    quantiles: dict[str, list[float]] = Field(
        description="Quantiles of the calibration signals the candidate thresholds were read at."
    )
    samples: dict[str, int] = Field(description="Calibration and held-out questions.")
    outcomes: dict[str, float] = Field(
        default_factory=dict,
        description="Recall@K of familiarity and of the chosen adaptive rule, per split and category.",
    )
    data: str = Field(description="What the signals were computed on.")
    command: str = Field(description="The command that made this file.")
    created: str = Field(description="UTC time the file was written.")


def text_encoder_identity(config: KioskConfig) -> tuple[str, str]:
    """(name, sha256) of the text encoder as configured: graph, tokenizer and, for fp32, the swapped-in weights."""
    from kiosk.models import ModelStore
    from kiosk.text.encoder import FP32_WEIGHTS, TOKENIZER, WEIGHTS

    manifest = ModelStore(config.paths.models).manifest
    model = config.text.model
    parts = [WEIGHTS, manifest.get(model).sha256, manifest.get(TOKENIZER).sha256]
    if WEIGHTS == "fp32":
        parts.append(manifest.get(FP32_WEIGHTS).sha256)
    return f"{model} ({WEIGHTS})", hashlib.sha256("|".join(parts).encode()).hexdigest()


def calibration_path(directory: Path, encoder_sha256: str) -> Path:
    return Path(directory) / f"adaptive-{encoder_sha256[:16]}.json"


def candidates(outcomes: Sequence[Outcome], max_entropy: float) -> list[Rule]:
    """Rules whose thresholds are quantiles of the calibration signals, "never" first."""
    if not outcomes:
        raise CalibrationError("adaptive calibration needs calibration questions", "give some outcomes")
    means = np.array([o.signal.mean_similarity for o in outcomes])
    entropies = np.array([o.signal.entropy for o in outcomes])
    mean_cuts = sorted({round(float(v), 4) for v in np.quantile(means, MEAN_QUANTILES)})
    entropy_cuts = sorted({round(float(v), 4) for v in np.quantile(entropies, ENTROPY_QUANTILES)} | {max_entropy})
    never = Rule(NEVER, NEVER, max_entropy)
    rules = [never]
    for low in [NEVER, *mean_cuts]:
        for high in [cut for cut in mean_cuts if cut > low] + [1.0]:
            for tau in entropy_cuts:
                rules.append(Rule(low, high, max(tau, 1e-4)))
    return rules


def select(outcomes: Sequence[Outcome], k_probe: int) -> Rule:
    """The candidate rule with the largest total recall gain on the calibration questions and no category losing
    (ties: fewer questions sent to recollection, the slower path); "never" unless some rule gains."""
    max_entropy = round(float(np.log(k_probe)), 4)
    best, best_key = Rule(NEVER, NEVER, max_entropy), (0.0, 0)
    categories = sorted({o.category for o in outcomes})
    for rule in candidates(outcomes, max_entropy):
        chosen = [o for o in outcomes if rule.recollects(o.signal)]
        if not chosen:
            continue
        if any(sum(o.gain for o in chosen if o.category == c) < 0 for c in categories):
            continue
        key = (round(sum(o.gain for o in chosen), 9), -len(chosen))
        if key > best_key:
            best, best_key = rule, key
    return best


def adaptive_recall(outcomes: Sequence[Outcome], familiarity: Sequence[float], rule: Rule) -> float:
    """Mean recall of the adaptive choice under `rule`, given each question's familiarity recall."""
    if not outcomes:
        return 0.0
    values = [f + (o.gain if rule.recollects(o.signal) else 0.0) for o, f in zip(outcomes, familiarity, strict=True)]
    return float(np.mean(values))


def load(path: Path, encoder_sha256: str) -> AdaptiveCalibration:
    """The calibration at `path`, refused if it was made for another encoder."""
    return load_for_encoder(path, AdaptiveCalibration, encoder_sha256, "adaptive", "bench.bench_hybrid")


def load_for_encoder(
    path: Path, model: type[EncoderCalibration], encoder_sha256: str, kind: str, bench: str
) -> EncoderCalibration:
    """A per-encoder calibration file (`kind` made by `python -m <bench> --write-calibration`), refused if it is
    unreadable or was made for another text encoder."""
    try:
        calibration = model.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise CalibrationError(f"{kind} calibration {path} is unreadable ({exc})", f"re-run {bench}") from exc
    made_for = str(calibration.model_dump().get("encoder_sha256", ""))
    if made_for != encoder_sha256:
        raise CalibrationError(
            f"{kind} calibration {path} was made for encoder sha256 {made_for[:12]}…, not {encoder_sha256[:12]}…",
            f"re-run `python -m {bench} --write-calibration` with the active encoder",
        )
    return calibration


def apply(tuning: RetrievalTuning, calibration: AdaptiveCalibration) -> RetrievalTuning:
    """`tuning` with the calibrated thresholds (and the signal settings they were calibrated for)."""
    return replace(
        tuning,
        theta_low=calibration.theta_low,
        theta_high=calibration.theta_high,
        tau_entropy=calibration.tau_entropy,
        k_probe=calibration.k_probe,
        softmax_lambda=calibration.softmax_lambda,
    )
