"""The shipped sensitive-note threshold: calibration/sensitive-<modality>.json, and the threshold the kiosk uses.

The file is made from fused multi-frame probes at a target FAR (kiosk.calibration.fused_trials,
bench/bench_sensitive_threshold.py) and is used only with the encoder it was made for. This module stays light
(no scipy): the answer path reads it on every query with a sensitive note in reach.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kiosk.calibration.schema import EncoderInfo, FusedPoint, Rate
from kiosk.config import KioskConfig
from kiosk.retrieval.sensitive import strict_threshold

SENSITIVE_FILE = "sensitive-{modality}.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SensitiveCalibration(_Model):
    modality: Literal["face", "palm"]
    threshold: float = Field(description="Cosine a sensitive note needs (highest per-frame-count target-FAR point).")
    target_far: float = Field(description="FAR the threshold is chosen for.")
    resolved: bool = Field(description="Every frame count had at least 1/target_far impostor trials.")
    frames_fused: int = Field(description="Frames the live fuser averages (FUSE_FRAMES); far/frr below are for it.")
    far: Rate = Field(description="FAR of fused probes (frames_fused frames) at the threshold.")
    frr: Rate = Field(description="FRR of fused probes (frames_fused frames) at the threshold.")
    trade_off: list[FusedPoint] = Field(description="FAR and FRR at the threshold per number of fused frames.")
    checks: dict[str, Rate] = Field(default_factory=dict, description="Other measured rates at the threshold.")
    encoder: EncoderInfo
    dataset: str = Field(description="Data the trials came from.")
    protocol: str = Field(description="How probes, templates and trials were made.")
    identities: int = Field(description="Identities with genuine trials.")
    gallery: int = Field(description="Identities enrolled (genuine ones plus impostor-only ones).")
    created: datetime
    command: str | None = None
    alignment_search: bool = Field(
        default=False,
        description="Palm: probes carried their ROI's re-alignments (palm.alignment_search); used only with it.",
    )


def sensitive_path(calibration_dir: Path, modality: str) -> Path:
    return calibration_dir / SENSITIVE_FILE.format(modality=modality)


def is_sensitive_file(path: Path) -> bool:
    """A sensitive-threshold file (not a gate calibration), by its name."""
    return any(path.name == SENSITIVE_FILE.format(modality=modality) for modality in ("face", "palm"))


@lru_cache(maxsize=8)
def _read(path: Path, _stamp: tuple[int, int]) -> SensitiveCalibration | None:
    try:
        return SensitiveCalibration.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError):
        return None  # the product then falls back to tau + margin, as without a file


def calibrated_sensitive_threshold(
    calibration_dir: Path, modality: str, model_sha256: str, alignment_search: bool = False
) -> float | None:
    """The shipped sensitive threshold for `modality` made with this encoder, or None (no file, another encoder,
    or a palm file made with the re-alignment search on when `alignment_search` is off, or the other way round:
    the gate's calibration is refused then, kiosk.calibration.active)."""
    path = sensitive_path(calibration_dir, modality)
    try:
        stat = path.stat()
    except OSError:
        return None
    calibration = _read(path, (stat.st_size, stat.st_mtime_ns))
    if calibration is None or calibration.modality != modality or calibration.encoder.sha256 != model_sha256:
        return None
    if modality == "palm" and calibration.alignment_search != alignment_search:
        return None
    return calibration.threshold


def sensitive_threshold(config: KioskConfig, modality: str, model_sha256: str, tau: float) -> float:
    """The cosine a sensitive note needs: configured value, else the shipped calibrated one, else tau + margin."""
    calibrated = calibrated_sensitive_threshold(
        Path(config.paths.calibration_dir), modality, model_sha256, config.palm.alignment_search
    )
    return strict_threshold(config.sensitive, modality, tau, calibrated)
