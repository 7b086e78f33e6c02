"""The threshold the gate uses, read from the active calibration file for a modality.

The kiosk refuses to gate with a calibration made for a different encoder model: cosine scores of two
encoders live on different scales, so a foreign threshold would silently open or close everyone's memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from kiosk.calibration.schema import Calibration
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError

Modality = Literal["face", "palm"]
MODALITIES: tuple[Modality, ...] = ("face", "palm")


def calibration_path(config: KioskConfig, modality: str) -> Path:
    if modality not in MODALITIES:
        raise CalibrationError(f"unknown modality '{modality}'", "use 'face' or 'palm'")
    name = config.gate.face_calibration if modality == "face" else config.gate.palm_calibration
    return Path(config.paths.calibration_dir) / name


def load_calibration(path: Path, modality: str = "face|palm") -> Calibration:
    """Read and validate one calibration file; any problem is one CalibrationError line."""
    if not path.is_file():
        raise CalibrationError(f"calibration file {path} not found", f"run `kiosk calibrate {modality} --data DIR`")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"calibration file {path} is unreadable ({exc})", "re-run `kiosk calibrate`") from exc
    try:
        return Calibration.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CalibrationError(
            f"calibration file {path} is invalid ('{where}': {first['msg']})", "re-run `kiosk calibrate`"
        ) from exc


def active_calibration(config: KioskConfig, modality: str, model_sha256: str) -> Calibration:
    """The active calibration for `modality`, checked against the encoder that makes the probes."""
    path = calibration_path(config, modality)
    calibration = load_calibration(path, modality)
    if calibration.modality != modality:
        raise CalibrationError(
            f"calibration file {path} is for {calibration.modality}, not {modality}",
            f"point gate.{modality}_calibration at a {modality} calibration",
        )
    if calibration.encoder.sha256 != model_sha256:
        raise CalibrationError(
            f"refusing to gate {modality}: {path} was made for encoder {calibration.encoder.name} "
            f"sha256 {calibration.encoder.sha256[:12]}… but the active one is sha256 {model_sha256[:12]}…",
            f"run `kiosk calibrate {modality} --data DIR` with the active encoder",
        )
    check_alignment_search(config, calibration, path)
    return calibration


def check_alignment_search(config: KioskConfig, calibration: Calibration, path: Path) -> None:
    """A palm tau holds only for probes scored the way its trials were: with the re-alignment search (which raises
    impostor scores) or without it. A mismatch with `palm.alignment_search` is refused, never silently used."""
    if calibration.modality != "palm" or calibration.alignment_search == config.palm.alignment_search:
        return
    made = "with" if calibration.alignment_search else "without"
    now = "on" if config.palm.alignment_search else "off"
    raise CalibrationError(
        f"refusing to gate palm: {path} was made {made} the re-alignment search but palm.alignment_search is {now}",
        f"set palm.alignment_search = {str(calibration.alignment_search).lower()}, or run "
        "`kiosk calibrate palm --data DIR` with the current setting",
    )


def active_threshold(config: KioskConfig, modality: str, model_sha256: str) -> float:
    """Cosine threshold tau for `modality`; raises CalibrationError if missing or made for another model."""
    return active_calibration(config, modality, model_sha256).threshold
