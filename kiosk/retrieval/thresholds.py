"""Adaptive familiarity/recollection thresholds calibrated on the text encoder's own similarity scale.

Cosine scores of a sentence encoder on dialogue turns sit far below the seed's 0.75 (MiniLM's median
mean-top-15 similarity on LoCoMo is about 0.45), so fixed thresholds sent nearly every question to
recollection. The thresholds are instead read off two distributions of the familiarity signal:
- unrelated: questions asked against another person's memories (what "no memory of this" looks like);
- related: questions asked against the owner's own memories.
theta_low is the median unrelated mean (a question the owner's memories match no better than a stranger's
typically do goes to recollection); theta_high is the 5th percentile of the related means (above it
familiarity always runs); between them only a top-k flatter than 95 % of related ones goes to recollection.
Measured on LoCoMo (bench/results/hybrid.md), recollection never beat familiarity on any category at K=10
or K=30, so the rule sends only questions that look unrelated to the owner's memories there (under 1 %).
The result is stored per encoder (sha256) under calibration/.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kiosk.config import KioskConfig, RetrievalConfig
from kiosk.errors import CalibrationError
from kiosk.retrieval.results import FamiliaritySignal

UNRELATED_MEAN_QUANTILE = 0.5
RELATED_MEAN_QUANTILE = 0.05
RELATED_ENTROPY_QUANTILE = 0.95


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
    quantiles: dict[str, float] = Field(description="The quantiles the thresholds were read at.")
    samples: dict[str, int] = Field(description="How many signals of each distribution were used.")
    data: str = Field(description="What the signals were computed on.")
    command: str = Field(description="The command that made this file.")
    created: str = Field(description="UTC time the file was written.")


def text_encoder_identity(config: KioskConfig) -> tuple[str, str]:
    """(name, sha256) of the text encoder as configured: graph, tokenizer and, for fp32, the swapped-in weights."""
    from kiosk.models import ModelStore

    manifest = ModelStore(config.paths.models).manifest
    text = config.text
    parts = [text.weights, manifest.get(text.model).sha256, manifest.get(text.tokenizer).sha256]
    if text.weights == "fp32":
        parts.append(manifest.get(text.fp32_weights).sha256)
    return f"{text.model} ({text.weights})", hashlib.sha256("|".join(parts).encode()).hexdigest()


def calibration_path(directory: Path, encoder_sha256: str) -> Path:
    return Path(directory) / f"adaptive-{encoder_sha256[:16]}.json"


def derive(related: Sequence[FamiliaritySignal], unrelated: Sequence[FamiliaritySignal]) -> tuple[float, float, float]:
    """(theta_low, theta_high, tau_entropy) from the two signal distributions (see the module doc)."""
    if not related or not unrelated:
        raise CalibrationError("adaptive calibration needs related and unrelated signals", "give both samples")
    related_means = np.array([s.mean_similarity for s in related])
    theta_low = float(np.quantile([s.mean_similarity for s in unrelated], UNRELATED_MEAN_QUANTILE))
    theta_high = max(theta_low, float(np.quantile(related_means, RELATED_MEAN_QUANTILE)))
    tau_entropy = float(np.quantile([s.entropy for s in related], RELATED_ENTROPY_QUANTILE))
    return round(theta_low, 4), round(theta_high, 4), round(max(tau_entropy, 1e-4), 4)


def load(path: Path, encoder_sha256: str) -> AdaptiveCalibration:
    """The calibration at `path`, refused if it was made for another encoder."""
    try:
        calibration = AdaptiveCalibration.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise CalibrationError(
            f"adaptive calibration {path} is unreadable ({exc})", "re-run bench.bench_hybrid"
        ) from exc
    if calibration.encoder_sha256 != encoder_sha256:
        raise CalibrationError(
            f"adaptive calibration {path} was made for encoder sha256 {calibration.encoder_sha256[:12]}…, "
            f"not {encoder_sha256[:12]}…",
            "re-run `python -m bench.bench_hybrid --write-calibration` with the active encoder",
        )
    return calibration


def apply(config: RetrievalConfig, calibration: AdaptiveCalibration) -> RetrievalConfig:
    """`config` with the calibrated thresholds (and the signal settings they were calibrated for)."""
    return config.model_copy(
        update={
            "theta_low": calibration.theta_low,
            "theta_high": calibration.theta_high,
            "tau_entropy": calibration.tau_entropy,
            "k_probe": calibration.k_probe,
            "softmax_lambda": calibration.softmax_lambda,
        }
    )
