"""Thresholds read off the text encoder's own cosine scale (the relevance floor, kiosk.retrieval.relevance): the
configured encoder's identity, and reading a calibration under calibration/ that must have been made for it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError

EncoderCalibration = TypeVar("EncoderCalibration", bound=BaseModel)


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
